"""``stratamem audit``: verify the hash chain (against an anchor kept outside the store), write an anchor,
and page through the events a reader of some clearance or a server principal may see."""

from __future__ import annotations

import sys
from typing import Any

import click

from .. import shapes
from ..audit_anchor import read_anchor, read_key
from ..errors import ValidationError
from ..labels import Label
from ..private import private_writer
from .root import Context, cli, run
from .store_commands import writable_target


@cli.group()
def audit() -> None:
    """Inspect and verify the audit log."""


_KEY_HELP = "HMAC key file kept apart from the anchor (e.g. head -c 32 /dev/urandom > anchor.key)."


@audit.command("verify")
@click.option(
    "--anchor",
    "anchor_file",
    type=click.Path(dir_okay=False),
    help="An anchor from 'audit anchor': events up to it must all be present and unchanged.",
)
@click.option("--key", "key_file", type=click.Path(dir_okay=False), help=_KEY_HELP)
@click.pass_obj
def audit_verify(ctx: Context, anchor_file: str | None, key_file: str | None) -> None:
    """Exit 0 when the hash chain is intact, 3 naming the first bad sequence otherwise."""

    def action() -> None:
        key = read_key(key_file) if key_file else None
        if key is not None and anchor_file is None:
            raise ValidationError("--key needs --anchor")
        anchor = read_anchor(anchor_file, key) if anchor_file else None
        bad = ctx.store(existing=True).verify_audit(anchor)
        shape: dict[str, Any] = {"intact": bad is None}
        if anchor is not None:
            shape["anchor_seq"] = anchor.seq
        if bad is None:
            suffix = f" (through anchored sequence {anchor.seq})" if anchor is not None else ""
            ctx.emit(shape, f"audit log intact{suffix}")
        else:
            shape["first_bad_seq"] = bad
            ctx.emit(shape, f"audit log broken at sequence {bad}")
            sys.exit(3)

    run(ctx, action)


@audit.command("anchor")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--key", "key_file", type=click.Path(dir_okay=False), help=_KEY_HELP)
@click.pass_obj
def audit_anchor(ctx: Context, file: str | None, key_file: str | None) -> None:
    """Print (or write to FILE, mode 0600) a checkpoint of the audit chain to keep outside the store."""

    def action() -> None:
        key = read_key(key_file) if key_file else None
        if file is not None:
            writable_target(file)
        anchor = ctx.store(existing=True).audit_anchor()
        text = anchor.dumps(key)
        if file is None:
            click.echo(text, nl=False)
            return
        with private_writer(file) as out:
            out.write(text)
        click.echo(f"anchored the audit log at sequence {anchor.seq} in {file}", err=True)

    run(ctx, action)


@audit.command("show")
@click.option(
    "--lineage", help="Only events that touched this lineage id (who read it, when, at what taint)."
)
@click.option(
    "--clearance",
    default="RESTRICTED",
    show_default=True,
    help="Show what a reader of this clearance may see (operator actions count as RESTRICTED).",
)
@click.option("--principal", help="Show only what this server principal may see: its own sessions' events.")
@click.option(
    "--limit",
    default=50,
    show_default=True,
    type=click.IntRange(min=0),
    help="At most N events: the newest, or the next after --after (0 = all).",
)
@click.option("--after", type=click.IntRange(min=0), help="Page forward: events after this sequence number.")
@click.option(
    "--before", type=click.IntRange(min=0), help="Page back: the newest events before this sequence."
)
@click.pass_obj
def audit_show(
    ctx: Context,
    lineage: str | None,
    clearance: str,
    principal: str | None,
    limit: int,
    after: int | None,
    before: int | None,
) -> None:
    """Show audit events (no memory content is ever logged)."""

    def action() -> None:
        store = ctx.store(existing=True)
        label = Label.parse(clearance)  # a level, or a level with compartments: CONFIDENTIAL+HR
        if limit > 0:
            events, more = store.audit_page(
                limit, label, lineage, owner=principal, after=after, before=before
            )
        else:
            events, more = (
                store.audit_events(label, lineage, owner=principal, after=after, before=before),
                False,
            )
        if ctx.as_json:
            click.echo(shapes.dumps(shapes.audit_page(events, more, forward=after is not None)))
            return
        for e in events:
            keys = ",".join(e.keys)
            click.echo(
                f"{e.seq:>6} {e.time.isoformat()} {e.operation:<14} {e.outcome:<9} "
                f"taint={e.taint.name:<12} agent={e.agent_id or '-'} session={e.session_id or '-'} "
                f"keys={keys or '-'}"
            )
        if more:
            cursor = f"--after {events[-1].seq}" if after is not None else f"--before {events[0].seq}"
            click.echo(f"(more events: {cursor})", err=True)

    run(ctx, action)
