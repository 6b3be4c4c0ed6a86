"""``stratamem session``: show a session, or change its clearance and peers — the only way to change them,
and an audited operator action."""

from __future__ import annotations

from typing import Any

import click

from ..errors import ValidationError
from ..storage.records import SessionRecord
from .root import Context, cli, run


@cli.group("session")
def session_group() -> None:
    """Inspect a session, or change its clearance and peers (operator)."""


def _session_shape(record: SessionRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "agent_id": record.agent_id,
        "taint": record.taint.name,
        "clearance": record.clearance.name,
        "peers": list(record.peers),
        "owner": record.owner,
        "created_at": record.created_at.isoformat(),
    }


def _session_human(record: SessionRecord) -> str:
    return (
        f"session {record.id} agent={record.agent_id} taint={record.taint.name} "
        f"clearance={record.clearance.name} peers={','.join(record.peers) or '-'} owner={record.owner or '-'}"
    )


@session_group.command("show")
@click.option("--session", "target", help="The session id (default: the global --session).")
@click.pass_obj
def session_show(ctx: Context, target: str | None) -> None:
    """Show a session's agent, taint, clearance, peers and owner."""

    def action() -> None:
        record = ctx.store(existing=True).backend.session_record(_target(ctx, target))
        ctx.emit(_session_shape(record), _session_human(record))

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
        record = ctx.store().set_session_limits(_target(ctx, target), clearance, new_peers)
        ctx.emit(_session_shape(record), _session_human(record))

    run(ctx, action)


def _target(ctx: Context, target: str | None) -> str:
    chosen = target or ctx.session_id
    if not chosen:
        raise ValidationError("which session? give --session ID")
    return chosen
