"""``stratamem session``: list sessions (the console's view), show one, change its clearance and peers —
the only way to change them, and an audited operator action —, or enter a compartment in it."""

from __future__ import annotations

from typing import Any

import click

from .. import shapes
from ..errors import ValidationError
from ..labels import Label
from ..operator import OperatorView
from ..server import console_payloads, payloads
from ..session import Session
from ..storage.records import SessionRecord
from ..store import Store
from .root import Context, cli, run


@cli.group("session")
def session_group() -> None:
    """Inspect a session, or change its clearance and peers (operator)."""


def _session_shape(store: Store, record: SessionRecord) -> dict[str, Any]:
    """The session as ``--json`` prints it; ``label``/``clearance_label`` once it is cleared for a
    compartment (``payloads.labels``)."""
    return {
        "id": record.id,
        "agent_id": record.agent_id,
        "taint": record.taint.name,
        "clearance": record.clearance.name,
        **payloads.labels(record, store.compartments.names_of),
        "peers": list(record.peers),
        "owner": record.owner,
        "created_at": record.created_at.isoformat(),
    }


def _session_human(store: Store, record: SessionRecord) -> str:
    shown = payloads.labels(record, store.compartments.names_of)
    taint, clearance = (
        shown.get("label", record.taint.name),
        shown.get("clearance_label", record.clearance.name),
    )
    return (
        f"session {record.id} agent={record.agent_id} taint={taint} "
        f"clearance={clearance} peers={','.join(record.peers) or '-'} owner={record.owner or '-'}"
    )


def _emit(ctx: Context, store: Store, record: SessionRecord) -> None:
    ctx.emit(_session_shape(store, record), _session_human(store, record))


@session_group.command("list")
@click.option(
    "--agent", "agent", help="Only this agent's sessions (default: the global --agent, else every agent's)."
)
@click.option(
    "--all", "include_one_shot", is_flag=True, help="Include the one-shot sessions of single commands."
)
@click.option(
    "--clearance",
    default="RESTRICTED",
    show_default=True,
    help="List what an operator of this clearance may see: sessions whose taint is within it.",
)
@click.option(
    "--limit", default=50, show_default=True, type=click.IntRange(1, 200), help="At most N sessions."
)
@click.option("--after", help="Page on: the cursor the previous page printed.")
@click.pass_obj
def session_list(
    ctx: Context, agent: str | None, include_one_shot: bool, clearance: str, limit: int, after: str | None
) -> None:
    """List sessions, newest first: agent, id, taint, clearance, when opened, one-shot or not.

    The console's read, audited as one (console.sessions); one-shot sessions (a command run without
    --session) are left out unless --all.
    """

    def action() -> None:
        cursor = console_payloads.decode_cursor(after, (int, str))
        view = OperatorView.open(ctx.store(existing=True), Label.parse(clearance), "cli")
        found = view.sessions(ctx.agent if agent is None else agent, cursor, limit, one_shot=include_one_shot)
        page = console_payloads.sessions_page(found, limit, view.store.compartments.names_of)
        if ctx.as_json:
            click.echo(shapes.dumps(page))
            return
        for s in found:
            r = s.record
            click.echo(
                shapes.printable(
                    f"{r.agent_id:<16} {r.id:<40} taint={r.taint.name:<12} clearance={r.clearance.name:<12} "
                    f"opened={r.created_at.isoformat()}{' one-shot' if r.one_shot else ''}"
                )
            )
        if page["next"]:
            click.echo(f"(more sessions: --after {page['next']})", err=True)

    run(ctx, action)


@session_group.command("show")
@click.option("--session", "target", help="The session id (default: the global --session).")
@click.pass_obj
def session_show(ctx: Context, target: str | None) -> None:
    """Show a session's agent, taint, clearance, peers and owner."""

    def action() -> None:
        store = ctx.store(existing=True)
        _emit(ctx, store, store.backend.session_record(_target(ctx, target)))

    run(ctx, action)


@session_group.command("set")
@click.option("--session", "target", help="The session id (default: the global --session).")
@click.option("--clearance", help="The new clearance (unchanged if not given).")
@click.option("--peer", "peers", multiple=True, help="The new peers, replacing the old (repeatable).")
@click.option("--no-peers", is_flag=True, help="Remove every peer.")
@click.pass_obj
def session_set(
    ctx: Context, target: str | None, clearance: str | None, peers: tuple[str, ...], no_peers: bool
) -> None:
    """Change a session's clearance and/or peers: the only way to, and an audited operator action.

    A resume (--session ID, stratamem mcp --session ID) never changes them.
    """

    def action() -> None:
        if peers and no_peers:
            raise ValidationError("--peer and --no-peers exclude each other")
        if clearance is None and not peers and not no_peers:
            raise ValidationError("nothing to change: give --clearance, --peer or --no-peers")
        new_peers = () if no_peers else (peers or None)
        store = ctx.store()
        _emit(ctx, store, store.set_session_limits(_target(ctx, target), clearance, new_peers))

    run(ctx, action)


@session_group.command("enter")
@click.argument("compartment")
@click.option("--session", "target", help="The session id (default: the global --session).")
@click.option(
    "--reason", default="compartment entered from the command line", show_default=True, help="Why (audited)."
)
@click.pass_obj
def session_enter(ctx: Context, compartment: str, target: str | None, reason: str) -> None:
    """Enter COMPARTMENT in a session: its taint gains it for good (audited like an escalation).

    A compartment the session's clearance lacks is refused (POLICY_BLOCKED, exit 4) exactly as a level
    above it is.
    """

    def action() -> None:
        store = ctx.store(existing=True)
        session = Session(store, store.backend.session_record(_target(ctx, target)).id)
        session.enter(compartment, reason, source="cli")
        _emit(ctx, store, session.record)

    run(ctx, action)


def _target(ctx: Context, target: str | None) -> str:
    chosen = target or ctx.session_id
    if not chosen:
        raise ValidationError("which session? give --session ID")
    return chosen
