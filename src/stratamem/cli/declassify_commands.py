"""``stratamem declassify``: write a record's content (or a redacted text of it) at a lower label — the one
way anything moves down —, and under the two-person rule approve, deny and list the requests (operator).

``stratamem declassify AGENT KEY --from LABEL --to LABEL --reason TEXT`` performs the act (or, when the
config's ``[declassify] require_approval`` is on and no ``--approver`` is named, records a pending request);
``declassify approve ID --as NAME`` performs a request as a second operator; ``declassify deny`` refuses one;
``declassify list`` shows the register, newest first.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..declassify import MAX_PAGE, Declassification
from ..importers.sources import read_text
from ..store import Store, default_url
from .root import Context, cli, run

_PERFORM = "run"


class _DeclassifyGroup(click.Group):
    """A group whose first argument, when it names no subcommand, is the AGENT of ``run``: so
    ``declassify AGENT KEY ...`` reads as the act itself (an agent named like a subcommand: ``declassify run``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = [_PERFORM, *args]
        return super().parse_args(ctx, args)


def _open(ctx: Context, config_path: str | None) -> Store:
    """The store of --db with the two-person rule of ``[declassify]`` in --config (off without one)."""
    options: dict[str, Any] = {}
    if config_path is not None:
        from ..server.config import load_config  # the server package is only needed with a config

        options = load_config(config_path).declassify.store_options()
    ctx._store = Store(ctx.db or default_url(), **options)
    return ctx._store


_config = click.option(
    "--config",
    "config_path",
    envvar="STRATAMEM_CONFIG",
    type=click.Path(exists=True, dir_okay=False),
    help="Server config (TOML) whose [declassify] table sets the two-person rule and the request lifetime.",
)


def _human(found: Declassification) -> str:
    head = f"declassification {found.id} {found.status}: {found.agent_id}/{found.key} {found.from_label.name}"
    tail = f" -> {found.to_label.name} by {found.actor}"
    if found.approver:
        tail += f", {'denied' if found.status == 'denied' else 'approved'} by {found.approver}"
    if found.status == "pending" and found.expires_at is not None:
        tail += f" (approve before {found.expires_at.isoformat()})"
    return head + tail + f" — {found.reason}"


@cli.group("declassify", cls=_DeclassifyGroup, subcommand_metavar="AGENT KEY [OPTIONS] | COMMAND [ARGS]...")
def declassify_group() -> None:
    """Declassify a record: AGENT KEY --from LABEL --to LABEL --reason TEXT (operator); approve, deny, list."""


@declassify_group.command(_PERFORM)
@click.argument("agent")
@click.argument("key")
@click.option(
    "--from", "from_label", required=True, help="The label the record is live at, e.g. CONFIDENTIAL+HR."
)
@click.option("--to", "to_label", required=True, help="The strictly lower label to write the new version at.")
@click.option("--reason", required=True, help="Why (at most 200 characters; kept in the audit chain).")
@click.option(
    "--replacement-file",
    type=click.Path(exists=True, dir_okay=False),
    help="A redacted text (UTF-8) to write instead of the record's content.",
)
@click.option("--approver", help="The second operator approving now (two-person rule).")
@click.option("--as", "actor", default="operator", show_default=True, help="The operator acting.")
@_config
@click.pass_obj
def declassify_run(
    ctx: Context,
    agent: str,
    key: str,
    from_label: str,
    to_label: str,
    reason: str,
    replacement_file: str | None,
    approver: str | None,
    actor: str,
    config_path: str | None,
) -> None:
    """Write a new version of KEY at a lower label (same lineage, the original kept; audited)."""

    def action() -> None:
        replacement = None if replacement_file is None else read_text(Path(replacement_file))
        found = _open(ctx, config_path).declassify(
            agent, key, from_label, to_label, reason, actor=actor, approver=approver, replacement=replacement
        )
        ctx.emit(found.to_dict(), _human(found))

    run(ctx, action)


def _decision(
    name: str, summary: str, who: str, decide: Callable[[Store], Callable[..., Declassification]]
) -> None:
    """``declassify approve|deny ID --as NAME``: one pending request decided by the operator named."""

    def command(ctx: Context, request_id: int, operator: str, config_path: str | None) -> None:
        def action() -> None:
            found = decide(_open(ctx, config_path))(request_id, operator)
            ctx.emit(found.to_dict(), _human(found))

        run(ctx, action)

    command.__doc__ = summary
    decorated: Any = command
    decorators: list[Callable[[Any], Any]] = [
        click.argument("request_id", type=int),
        click.option("--as", "operator", required=True, help=who),
        _config,
        click.pass_obj,
    ]
    for decorate in decorators:
        decorated = decorate(decorated)
    declassify_group.command(name)(decorated)


_decision(
    "approve",
    "Perform pending request ID as a second operator (refused when it expired or was decided).",
    "The approving operator (not the one who asked).",
    lambda store: store.approve_declassification,
)
_decision(
    "deny",
    "Refuse pending request ID (nothing is written).",
    "The operator refusing it.",
    lambda store: store.deny_declassification,
)


@declassify_group.command("list")
@click.option("--pending", is_flag=True, help="Only requests waiting for approval.")
@click.option(
    "--status",
    type=click.Choice(["pending", "done", "denied", "expired"]),
    help="Only requests in this state.",
)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, MAX_PAGE), help="At most N.")
@click.option("--before", type=int, help="Page on: the id the previous page printed.")
@click.pass_obj
def declassify_list(ctx: Context, pending: bool, status: str | None, limit: int, before: int | None) -> None:
    """The register of declassifications: requests and downgrades performed, newest first."""

    def action() -> None:
        chosen = "pending" if pending else status
        found, more = ctx.store(existing=True).declassifications(chosen, limit=limit, before=before)
        shape = {"declassifications": [f.to_dict() for f in found], "next_before": more}
        lines = [_human(f) for f in found] or ["no declassifications"]
        if more is not None:
            lines.append(f"more: --before {more}")
        ctx.emit(shape, "\n".join(lines))

    run(ctx, action)
