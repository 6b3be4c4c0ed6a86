"""The README's first command: a narrated session showing what stratamem promises."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from .levels import Level
from .models import Memory
from .store import Store


def _say(text: str) -> None:
    click.echo(click.style(text, bold=True))


def _shown(memory: Memory | None) -> str:
    return "nothing" if memory is None else f"[{memory.level.name}] {memory.content}"


def run_demo(url: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = url or str(Path(tmp) / "demo.db")
        with Store(url) as store:
            click.echo(f"store: {url}\n")
            agent = store.session("assistant")
            _say("1. A new session starts at PUBLIC; saves take the session's level.")
            for key, text, tags in [
                ("user-name", "The user is called Sam.", ["personal"]),
                ("coffee", "Sam takes coffee black, no sugar.", ["preference"]),
                ("project", "Sam is migrating the billing service to Postgres by March.", ["work"]),
            ]:
                m = agent.save(key, text, tags=tags)
                click.echo(f"   saved {m.key:<10} [{m.level.name}] {m.content}")

            _say("\n2. The session reads a confidential file: its taint rises, and so does every write.")
            agent.escalate(Level.CONFIDENTIAL, "read payroll.xlsx", source="tool:read_file")
            m = agent.save("project", "Billing migration is blocked on the Q3 payroll audit.", tags=["work"])
            click.echo(f"   taint is now {agent.taint.name}; saved {m.key} [{m.level.name}]")

            _say("\n3. Shadowing: the confidential session sees one version of 'project', the highest.")
            click.echo(f"   get project -> {_shown(agent.get('project'))}")

            public = store.session("assistant")
            _say("\n4. A fresh PUBLIC session cannot see it, and cannot tell it exists.")
            click.echo(f"   get project -> {_shown(public.get('project'))}")
            for label, session in (("PUBLIC", public), ("CONFIDENTIAL", agent)):
                hits = session.search("when is the billing migration blocked?")
                shown = ", ".join(f"{h.memory.key}[{h.memory.level.name}] {h.score:.2f}" for h in hits)
                click.echo(f"   search as {label:<12} -> {shown}")

            _say("\n5. Stemmed, ranked search over key, content and tags (OR semantics).")
            for hit in public.search("how does Sam take his coffee?", max_results=3):
                click.echo(f"   {hit.score:5.2f}  {hit.memory.key}: {hit.memory.content}")

            _say("\n6. Deleting at CONFIDENTIAL un-shadows the PUBLIC version; the audit chain verifies.")
            agent.delete("project")
            click.echo(f"   get project -> {_shown(agent.get('project'))}")
            bad = store.verify_audit()
            click.echo(
                f"   {len(store.audit_events())} audit events, chain {'intact' if bad is None else f'broken at {bad}'}"
            )
