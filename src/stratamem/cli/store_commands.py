"""The operator's commands on a whole store: ``export``, ``import`` (every format; through the policy gate
unless ``--no-scan``), ``migrate`` to another backend, ``reindex`` for search by meaning, and ``purge``."""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Callable, Sequence
from typing import IO, Any

import click

from ..embed import EmbedderError
from ..errors import ValidationError
from ..importers import formats
from ..labels import Label
from ..levels import Level
from ..md_transfer import export_markdown, read_markdown
from ..private import private_writer
from ..progress import reporter, tracked
from ..store import Store
from ..transfer import dump_lines, read_records
from ..validation import check_agent_id, parse_time
from .root import Context, cli, run


def _stdin_text() -> IO[Any]:
    """Standard input as UTF-8 text, undecodable bytes kept as surrogates for the validators to refuse.

    ``click.open_file("-")``: ``click.get_text_stream`` is deprecated (removed in Click 9).
    """
    return click.open_file("-", encoding="utf-8", errors="surrogateescape")


def writable_target(file: str) -> None:
    """Refuse, before any work, an output path whose directory does not exist (a usage error, exit 2)."""
    parent = os.path.dirname(os.path.abspath(file))
    if not os.path.isdir(parent):
        raise ValidationError(f"cannot write {file}: the directory {parent} does not exist")


def _choices(values: str | None, parse: Callable[[str], Any]) -> set[Any] | None:
    return {parse(v.strip()) for v in values.split(",") if v.strip()} if values else None


@cli.command("export")
@click.argument("file", required=False, type=click.Path(writable=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "markdown", "mcp-memory"]),
    default="jsonl",
    show_default=True,
    help="jsonl: stratamem JSON Lines; markdown: FILE is a directory, written in the "
    "Markdown store's layout; mcp-memory: the graph as an MCP memory server memory.jsonl.",
)
@click.option("--agents", help="Only these agents (comma-separated; default: --agent, or all).")
@click.option("--levels", help="Only these levels (comma-separated; default: all).")
@click.option(
    "--level",
    default="PUBLIC",
    show_default=True,
    help="mcp-memory: export the graph of --agent as a session at this level (or label: CONFIDENTIAL+HR) sees it.",
)
@click.pass_obj
def export_(
    ctx: Context, file: str | None, fmt: str, agents: str | None, levels: str | None, level: str
) -> None:
    """Write every live memory (all levels), then transcripts and usage, as JSON Lines to FILE or stdout;
    the memories as Markdown to a directory; or the graph as an MCP memory file (operator)."""

    def action() -> None:
        if file is not None and fmt != "markdown" and os.path.isdir(file):
            raise ValidationError(
                f"{file} is a directory; JSON Lines go to a file (or use --format markdown)"
            )
        if file is not None and fmt != "markdown":  # a Markdown export creates its folder
            writable_target(file)
        store = ctx.store(existing=True)
        if fmt == "mcp-memory":
            lines = store.export_graph(agent_id=ctx.agent or "main", level=level)
        else:
            chosen_agents = _choices(agents, check_agent_id)
            chosen_levels = _choices(levels, Level.parse)
            only = next(iter(chosen_agents)) if chosen_agents and len(chosen_agents) == 1 else None
            agent = only if chosen_agents else ctx.agent
            memories = (
                m
                for m in store.export(agent_id=agent)
                if (not chosen_agents or m.agent_id in chosen_agents)
                and (not chosen_levels or m.level in chosen_levels)
            )
            if fmt == "markdown":
                if file is None:
                    raise ValidationError("export --format markdown needs a directory")
                count = export_markdown(memories, file, named=store.compartments.named)
                ctx.emit({"exported": count}, f"exported {count} memories to {file}")
                return
            turns = (
                t
                for t in store.export_turns(agent_id=agent)
                if (not chosen_agents or t.agent_id in chosen_agents)
                and (not chosen_levels or t.level in chosen_levels)
            )
            lines = itertools.chain(dump_lines(memories), dump_lines(turns))
        if file is None:
            for line in lines:
                click.echo(line, nl=False)
            return
        count = 0
        with private_writer(file) as out:  # every level's content: owner-only, like the store
            for line in lines:
                out.write(line)
                count += 1
        click.echo(f"exported {count} memories to {file}", err=True)

    run(ctx, action)


_BUILT_IN_FORMATS = ("jsonl", "markdown", "mcp-memory")


@cli.command("import")
@click.argument("file", type=click.Path(exists=True, allow_dash=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice([*_BUILT_IN_FORMATS, *formats()]),
    default="jsonl",
    show_default=True,
    help="jsonl: stratamem JSON Lines; markdown: FILE is a directory in the Markdown "
    "store's layout; mcp-memory: an MCP memory server memory.jsonl (a graph); other stores' files: "
    + ", ".join(formats())
    + ".",
)
@click.option(
    "--no-scan", is_flag=True, help="Skip the policy gate (poisoning scanner): only for trusted files."
)
@click.option(
    "--level",
    help="The level every imported record gets (agent: --agent): mcp-memory (default PUBLIC) "
    "and the other stores' formats (required).",
)
@click.option(
    "--no-embed",
    is_flag=True,
    help="With search by meaning on: leave the imported memories' vectors to 'stratamem reindex', "
    "a server's idle time and searches, instead of embedding them now.",
)
@click.pass_obj
def import_(ctx: Context, file: str, fmt: str, no_scan: bool, level: str | None, no_embed: bool) -> None:
    """Import JSON Lines or a Markdown directory, levels kept, or an MCP memory graph or another store's files at
    one level; one bad or poisoned line, record or file imports nothing (operator). With search by meaning
    on, the imported memories are then embedded (a bar on a terminal; --no-embed skips it)."""

    def action() -> None:
        store = ctx.store()
        if fmt not in _BUILT_IN_FORMATS:
            memories = _read_foreign(ctx, store, file, fmt, level)
            click.echo(
                f"stratamem import: read {len(memories)} memories from {file}; screening and writing",
                err=True,
            )
            count = _import(store, memories, no_scan, embed=not no_embed)
            ctx.emit({"imported": count}, f"imported {count} memories")
            return
        if fmt != "markdown" and os.path.isdir(file):
            raise ValidationError(f"{file} is a directory; use --format markdown to import one")
        if fmt == "mcp-memory":
            from pathlib import Path

            from ..importers.sources import read_text  # bounded; invalid UTF-8 named by line and byte

            lines = (_stdin_text().read() if file == "-" else read_text(Path(file))).split("\n")
            graph_level = level or "PUBLIC"
            nodes, edges = store.import_graph(
                tracked(lines, "importing", length=len(lines)),
                agent_id=ctx.agent or "main",
                level=graph_level,
                scan=not no_scan,
            )
            ctx.emit(
                {"imported": {"nodes": nodes, "edges": edges}},
                f"imported {nodes} nodes and {edges} relations at {Label.parse(graph_level).name}",
            )
            return
        if fmt == "markdown":
            # a label folder's compartments take this store's bits
            known = store.compartments.current(fresh=True)
            memories = read_markdown(file, store.max_content_bytes, store.now(), compartments=known)
            turns = list[Any]()
        elif file == "-":
            memories, turns = read_records(_stdin_text(), store.max_content_bytes, store.labelled)
        else:
            with open(file, encoding="utf-8", errors="surrogateescape") as stream:
                memories, turns = read_records(stream, store.max_content_bytes, store.labelled)
        count = _import(store, memories, no_scan, turns, embed=not no_embed)
        ctx.emit({"imported": count}, f"imported {count} memories")

    run(ctx, action)


def _import(
    store: Store, memories: list[Any], no_scan: bool, turns: Sequence[Any] = (), embed: bool = True
) -> int:
    """Every format's memories (and an export's turn records) through the gate and one batch
    transaction, a bar on a terminal; then, for a store that searches by meaning, their vectors."""
    with reporter("importing") as progress:
        count = store.import_memories(memories, scan=not no_scan, progress=progress, turns=turns)
    if count and store.semantic.mode != "lexical":
        _embed_imported(store, count, embed)
    return count


def _embed_imported(store: Store, count: int, embed: bool) -> None:
    """Embed what the import left pending (the memories are in; a model that fails only leaves them pending).

    Without this, the backlog would be worked off a bounded few per search (found lexically meanwhile), or
    by a server while it is idle.
    """
    later = "`stratamem reindex` embeds them; until then search finds them by their words"
    if not embed:
        click.echo(
            f"stratamem import: the {count} memories are not embedded yet (--no-embed); {later}", err=True
        )
        return
    try:
        with reporter("embedding") as progress:
            store.reindex(progress=progress)
    except EmbedderError as exc:
        click.echo(
            f"stratamem import: the {count} memories were imported but not embedded: {exc.message}; {later}",
            err=True,
        )


def _read_foreign(ctx: Context, store: Store, file: str, fmt: str, level: str | None) -> list[Any]:
    """Another store's files as memories at the operator's agent and level (nothing written yet)."""
    from pathlib import Path

    from ..importers import Target, get_format

    chosen = get_format(fmt)
    if level is None:
        raise ValidationError(f"--format {fmt} needs --level: the level these memories land at")
    if file == "-":
        raise ValidationError(f"--format {fmt} reads a {chosen.source}, not stdin")
    path = Path(file)
    if (chosen.source == "dir") != path.is_dir():
        raise ValidationError(
            f"--format {fmt} reads a {'folder' if chosen.source == 'dir' else 'file'}: {file}"
        )
    click.echo(f"stratamem import: reading {file} as {fmt}", err=True)
    target = Target("main" if ctx.agent is None else ctx.agent, Level.parse(level), store.max_content_bytes)
    return chosen.read(path, target)


@cli.command()
@click.option("--force", is_flag=True, help="Re-embed every memory, not only those without a current vector.")
@click.pass_obj
def reindex(ctx: Context, force: bool) -> None:
    """Embed memories for search by meaning (after an import or a model change); progress on stderr."""

    def action() -> None:
        with reporter("embedding") as progress:
            count = ctx.store(existing=True).reindex(progress=progress, force=force)
        embedder = ctx.store().semantic.embedder  # loaded by reindex, which refuses a store without one
        ctx.emit(
            {"reindexed": count, "model": embedder.identity if embedder is not None else None},
            f"{count} memories embedded",
        )

    run(ctx, action)


@cli.command("migrate")
@click.option(
    "--from", "from_url", required=True, help="Source store URL: a path, sqlite:///abs.db or postgresql://"
)
@click.option("--to", "to_url", required=True, help="Target store URL; the target must be empty.")
@click.option(
    "--language",
    "languages",
    multiple=True,
    help="Stemming language (repeatable; default: the languages the source was built with).",
)
@click.pass_obj
def migrate_(ctx: Context, from_url: str, to_url: str, languages: tuple[str, ...]) -> None:
    """Copy a whole store to another backend: every version, soft-deleted records, sessions, audit (operator)."""
    from ..migrate import migrate

    def action() -> None:
        count = migrate(
            from_url, to_url, languages=languages or None, progress=lambda rows: tracked(rows, "copying rows")
        )
        ctx.emit({"migrated": count}, f"migrated {count} rows")

    run(ctx, action)


@cli.command()
@click.option("--before", required=True, help="ISO 8601 cutoff (UTC when no offset is given).")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="The server's config file: its [retention] table applies (STRATAMEM_*_DAYS still win).",
)
@click.pass_obj
def purge(ctx: Context, before: str, config_path: str | None) -> None:
    """Hard-delete soft-deleted and expired records older than --before (operator).

    Transcript and usage records go by the retention the server uses: [retention] of --config, then
    STRATAMEM_TRANSCRIPT_DAYS / STRATAMEM_AUTOSAVE_TTL_DAYS / STRATAMEM_LEDGER_DAYS, then the
    documented defaults.
    """

    def action() -> None:
        from ..server.config import ServerConfig, load_config

        config = load_config(config_path) if config_path else ServerConfig()
        store = ctx.store()
        store.retention = config.turn_config(os.environ).retention  # a bad value stops here, exit 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # said below, in the command's own output
            result = store.purge(parse_time(before, "--before"), agent_id=ctx.agent)
        shape: dict[str, Any] = {"purged": int(result)}
        human = f"purged {int(result)} record(s)"
        if not result.erased:
            shape.update(erased=False, remaining=result.remaining)
            human += f"\nnot yet erased from the files: {result.remaining}"
        ctx.emit(shape, human)

    run(ctx, action)
