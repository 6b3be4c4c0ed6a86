"""The memory commands: ``save``, ``get``, ``search``, ``list`` and ``delete``, each one call of a session
(new, or resumed with ``--session``); and ``demo``, which narrates them on a fresh store."""

from __future__ import annotations

import sys

import click

from .. import shapes
from ..errors import NotFound
from ..paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from ..policy.gate import gated_save
from ..validation import MAX_RESULTS, parse_time
from .root import Context, cli, run


def _stdin_content() -> str:
    """CONTENT given as "-": all of stdin, less the one newline that echo or a here-string adds.

    Undecodable bytes stay as lone surrogates so validation refuses them with a clear error
    instead of a decoding traceback.
    """
    text = sys.stdin.buffer.read().decode("utf-8", errors="surrogateescape")
    return text[:-1] if text.endswith("\n") else text


def _one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


@cli.command()
@click.argument("key")
@click.argument("content")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--category", default="core", show_default=True)
@click.option("--occurred-at", help="When it happened (ISO 8601; without offset: UTC). Default: now.")
@click.option(
    "--context", help="Text that situates the memory (stored with it, used to find it, never shown)."
)
@click.pass_obj
def save(
    ctx: Context,
    key: str,
    content: str,
    tags: tuple[str, ...],
    category: str,
    occurred_at: str | None,
    context: str | None,
) -> None:
    """Save CONTENT under KEY at the session's taint ("-" reads CONTENT from stdin)."""

    def action() -> None:
        text = _stdin_content() if content == "-" else content
        memory = gated_save(
            ctx.session(),
            key,
            text,
            tags=tags,
            category=category,
            path="cli",
            origin="cli",
            occurred_at=occurred_at,
            context=context,
        )
        ctx.emit(shapes.saved(memory), f"saved {memory.key} [{memory.label.name}]")

    run(ctx, action)


@cli.command()
@click.argument("key")
@click.pass_obj
def get(ctx: Context, key: str) -> None:
    """Show the visible version of KEY."""

    def action() -> None:
        memory = ctx.session(existing=True).get(key)
        if memory is None:
            ctx.emit(shapes.got(key, None), f"not found: {key}")
            sys.exit(NotFound.exit_code)
        tags = f" tags={','.join(memory.tags)}" if memory.tags else ""
        ctx.emit(
            shapes.got(key, memory),
            f"{memory.key} [{memory.label.name}] agent={memory.agent_id}{tags}\n{memory.content}",
        )

    run(ctx, action)


@cli.command()
@click.argument("query")
@click.option(
    "-n",
    "max_results",
    default=10,
    show_default=True,
    type=click.IntRange(1, MAX_RESULTS),
    help=f"Hits at most (1 to {MAX_RESULTS}).",
)
@click.option(
    "--mode",
    type=click.Choice(["lexical", "semantic", "hybrid"]),
    help="Ranking for this call (default: the store's mode; env STRATAMEM_SEARCH_MODE).",
)
@click.pass_obj
def search(ctx: Context, query: str, max_results: int, mode: str | None) -> None:
    """Search visible memories (empty or * lists the most recent)."""

    def action() -> None:
        hits = ctx.session(existing=True).search(query, max_results=max_results, mode=mode)
        human = "\n".join(
            f"{h.score:7.3f}  {h.memory.key} [{h.memory.label.name}]: {_one_line(h.memory.content)}"
            for h in hits
        )
        ctx.emit(shapes.search_results(hits, query), human or "no results")

    run(ctx, action)


@cli.command("list")
@click.option("--tag", help="Only memories with exactly this tag.")
@click.option(
    "--limit",
    default=DEFAULT_PAGE_SIZE,
    show_default=True,
    type=click.IntRange(1, MAX_PAGE_SIZE),
    help=f"Memories per page (1 to {MAX_PAGE_SIZE}).",
)
@click.option("--cursor", help="Continue after a previous page (its next_cursor).")
@click.option("--occurred-since", help="Only memories that happened at or after this time (ISO 8601).")
@click.option("--occurred-until", help="Only memories that happened at or before this time (ISO 8601).")
@click.pass_obj
def list_(
    ctx: Context,
    tag: str | None,
    limit: int,
    cursor: str | None,
    occurred_since: str | None,
    occurred_until: str | None,
) -> None:
    """List visible memories, one page at a time (ordered by agent, then key)."""

    def action() -> None:
        since = None if occurred_since is None else parse_time(occurred_since, "--occurred-since")
        until = None if occurred_until is None else parse_time(occurred_until, "--occurred-until")
        page = ctx.session(existing=True).list(
            tag=tag, limit=limit, cursor=cursor, occurred_since=since, occurred_until=until
        )
        lines = [f"{m.key} [{m.label.name}]: {_one_line(m.content)}" for m in page]
        if page.next_cursor is not None:
            lines.append(f"more: use --cursor {page.next_cursor}")
        ctx.emit(shapes.listing(page, page.next_cursor), "\n".join(lines) or "no memories")

    run(ctx, action)


@cli.command()
@click.argument("key")
@click.pass_obj
def delete(ctx: Context, key: str) -> None:
    """Soft-delete the own agent's KEY at exactly the session's taint."""

    def action() -> None:
        memory = ctx.session().delete(key)
        ctx.emit(shapes.deleted(memory.key), f"deleted {memory.key} [{memory.label.name}]")

    run(ctx, action)


@cli.command()
@click.pass_obj
def demo(ctx: Context) -> None:
    """A short narrated session on a fresh store: levels, shadowing and search."""
    from ..demo import run_demo

    run_demo(ctx.db)
