"""The ``stratamem`` command line: the library's operations, one command each.

Every memory command runs in a session (a new one, or ``--session ID`` to
resume one with its persisted taint); ``--taint`` escalates it first. Output is
human-readable by default and the tools' JSON shapes with ``--json``. Exit
codes: 0 ok, 1 not found, 2 usage or validation, 3 storage, 4 policy.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

import click

from . import __version__, shapes
from .audit_anchor import read_anchor, read_key
from .errors import NotFound, StorageError, StratamemError, ValidationError
from .importers import formats
from .install_info import describe, location
from .levels import Level
from .md_transfer import export_markdown, read_markdown
from .paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, page_size
from .policy.gate import gated_save
from .policy.redact import redact_secrets
from .private import private_writer
from .progress import reporter, tracked
from .session import Session
from .storage.records import SessionRecord
from .storage.vectors import CATCH_UP
from .store import Store, default_url
from .transfer import dump_lines, read_records
from .validation import check_agent_id, check_id, parse_time

UNEXPECTED = "unexpected internal failure"


@dataclass
class Context:
    db: str | None
    agent: str | None
    taint: str | None
    session_id: str | None
    as_json: bool
    _store: Store | None = None

    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.db or default_url())
        return self._store

    def session(self) -> Session:
        # A resume keeps the session's own clearance and peers (never the CLI's defaults), and its agent
        # when --agent is not given.
        agent = self.agent
        if self.session_id is not None:
            check_id(self.session_id, "session id")  # before the lookup below reaches the store
        if agent is None and self.session_id:
            try:
                agent = self.store().backend.session_record(self.session_id).agent_id
            except NotFound:
                agent = None
        # an explicit --agent "" is refused by validation, never silently taken as "main"
        s = self.store().session("main" if agent is None else agent, session_id=self.session_id)
        if self.taint:
            s.escalate(Level.parse(self.taint), "command line --taint", source="cli")
        return s

    def emit(self, shape: Any, human: str) -> None:
        click.echo(shapes.dumps(shape) if self.as_json else shapes.printable(human))


def _fail(ctx: Context, exc: StratamemError) -> None:
    if ctx.as_json:
        click.echo(shapes.dumps(shapes.error_from(exc)))
    else:
        click.echo(shapes.printable(f"error [{exc.code}]: {redact_secrets(exc.message)}"), err=True)
    sys.exit(exc.exit_code)


def _run(ctx: Context, action: Callable[[], None]) -> None:
    """Map library errors to the contract's exit codes and output shapes; never a traceback."""
    try:
        action()
    except StratamemError as exc:
        _fail(ctx, exc)
    except Exception as exc:  # noqa: BLE001 - a bug must still answer in the contract's terms
        _fail(ctx, StorageError(f"{UNEXPECTED} ({type(exc).__name__})"))
    finally:
        if ctx._store is not None:
            ctx._store.close()


def _stdin_text() -> IO[Any]:
    """Standard input as UTF-8 text, undecodable bytes kept as surrogates for the validators to refuse.

    ``click.open_file("-")``: ``click.get_text_stream`` is deprecated (removed in Click 9).
    """
    return click.open_file("-", encoding="utf-8", errors="surrogateescape")


def _stdin_content() -> str:
    """CONTENT given as "-": all of stdin, less the one newline that echo or a here-string adds.

    Undecodable bytes stay as lone surrogates so validation refuses them with a clear error
    instead of a decoding traceback.
    """
    text = sys.stdin.buffer.read().decode("utf-8", errors="surrogateescape")
    return text[:-1] if text.endswith("\n") else text


def _given(first: str | None, second: str | None) -> str | None:
    """The first option that was given at all (an empty string counts as given)."""
    return first if first is not None else second


def _one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="stratamem", message="%(prog)s %(version)s")
@click.option(
    "--db",
    envvar="STRATAMEM_DB",
    help="Store URL: a path, sqlite:///abs.db, :memory:, markdown:///dir or postgresql://",
)
@click.option("--agent", help="Agent id (default: main).")
@click.option("--taint", help="Raise the session's taint to this level first.")
@click.option("--session", "session_id", help="Resume this session id (its taint persists).")
@click.option("--json", "as_json", is_flag=True, help="Print the tools' JSON shapes.")
@click.pass_context
def cli(
    click_ctx: click.Context,
    db: str | None,
    agent: str | None,
    taint: str | None,
    session_id: str | None,
    as_json: bool,
) -> None:
    """Classified, persistent memory for AI agents."""
    click_ctx.obj = Context(db, agent, taint, session_id, as_json)


@cli.command()
@click.argument("key")
@click.argument("content")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--category", default="core", show_default=True)
@click.pass_obj
def save(ctx: Context, key: str, content: str, tags: tuple[str, ...], category: str) -> None:
    """Save CONTENT under KEY at the session's taint ("-" reads CONTENT from stdin)."""

    def action() -> None:
        text = _stdin_content() if content == "-" else content
        memory = gated_save(ctx.session(), key, text, tags=tags, category=category, path="cli", origin="cli")
        ctx.emit(shapes.saved(memory), f"saved {memory.key} [{memory.level.name}]")

    _run(ctx, action)


@cli.command()
@click.argument("key")
@click.pass_obj
def get(ctx: Context, key: str) -> None:
    """Show the visible version of KEY."""

    def action() -> None:
        memory = ctx.session().get(key)
        if memory is None:
            ctx.emit(shapes.got(key, None), f"not found: {key}")
            sys.exit(NotFound.exit_code)
        tags = f" tags={','.join(memory.tags)}" if memory.tags else ""
        ctx.emit(
            shapes.got(key, memory),
            f"{memory.key} [{memory.level.name}] agent={memory.agent_id}{tags}\n{memory.content}",
        )

    _run(ctx, action)


@cli.command()
@click.argument("query")
@click.option("-n", "max_results", default=10, show_default=True, type=int)
@click.option(
    "--mode",
    type=click.Choice(["lexical", "semantic", "hybrid"]),
    help="Ranking for this call (default: the store's mode; env STRATAMEM_SEARCH_MODE).",
)
@click.pass_obj
def search(ctx: Context, query: str, max_results: int, mode: str | None) -> None:
    """Search visible memories (empty or * lists the most recent)."""

    def action() -> None:
        hits = ctx.session().search(query, max_results=max_results, mode=mode)
        human = "\n".join(
            f"{h.score:7.3f}  {h.memory.key} [{h.memory.level.name}]: {_one_line(h.memory.content)}"
            for h in hits
        )
        ctx.emit(shapes.search_results(hits, query), human or "no results")

    _run(ctx, action)


@cli.command("list")
@click.option("--tag", help="Only memories with exactly this tag.")
@click.option(
    "--limit",
    default=DEFAULT_PAGE_SIZE,
    show_default=True,
    type=int,
    help=f"Memories per page (1 to {MAX_PAGE_SIZE}).",
)
@click.option("--cursor", help="Continue after a previous page (its next_cursor).")
@click.pass_obj
def list_(ctx: Context, tag: str | None, limit: int, cursor: str | None) -> None:
    """List visible memories, one page at a time (ordered by agent, then key)."""

    def action() -> None:
        page = ctx.session().list(tag=tag, limit=page_size(limit), cursor=cursor)
        lines = [f"{m.key} [{m.level.name}]: {_one_line(m.content)}" for m in page]
        if page.next_cursor is not None:
            lines.append(f"more: use --cursor {page.next_cursor}")
        ctx.emit(shapes.listing(page, page.next_cursor), "\n".join(lines) or "no memories")

    _run(ctx, action)


@cli.command()
@click.argument("key")
@click.pass_obj
def delete(ctx: Context, key: str) -> None:
    """Soft-delete the own agent's KEY at exactly the session's taint."""

    def action() -> None:
        memory = ctx.session().delete(key)
        ctx.emit(shapes.deleted(memory.key), f"deleted {memory.key} [{memory.level.name}]")

    _run(ctx, action)


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

    Transcript and usage records go by the retention the server uses: ``[retention]`` of --config, then
    ``STRATAMEM_TRANSCRIPT_DAYS`` / ``STRATAMEM_AUTOSAVE_TTL_DAYS`` / ``STRATAMEM_LEDGER_DAYS``, then the
    documented defaults.
    """

    def action() -> None:
        from .server.config import ServerConfig, load_config

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

    _run(ctx, action)


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
        bad = ctx.store().verify_audit(anchor)
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

    _run(ctx, action)


@audit.command("anchor")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--key", "key_file", type=click.Path(dir_okay=False), help=_KEY_HELP)
@click.pass_obj
def audit_anchor(ctx: Context, file: str | None, key_file: str | None) -> None:
    """Print (or write to FILE, mode 0600) a checkpoint of the audit chain to keep outside the store."""

    def action() -> None:
        key = read_key(key_file) if key_file else None
        anchor = ctx.store().audit_anchor()
        text = anchor.dumps(key)
        if file is None:
            click.echo(text, nl=False)
            return
        with private_writer(file) as out:
            out.write(text)
        click.echo(f"anchored the audit log at sequence {anchor.seq} in {file}", err=True)

    _run(ctx, action)


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
        store = ctx.store()
        level = Level.parse(clearance)
        if limit > 0:
            events, more = store.audit_page(
                limit, level, lineage, owner=principal, after=after, before=before
            )
        else:
            events, more = (
                store.audit_events(level, lineage, owner=principal, after=after, before=before),
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

    _run(ctx, action)


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
        record = ctx.store().backend.session_record(_target(ctx, target))
        ctx.emit(_session_shape(record), _session_human(record))

    _run(ctx, action)


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

    A resume (`--session ID`, `stratamem mcp --session ID`) never changes them.
    """

    def action() -> None:
        if peers and no_peers:
            raise ValidationError("--peer and --no-peers exclude each other")
        if clearance is None and not peers and not no_peers:
            raise ValidationError("nothing to change: give --clearance, --peer or --no-peers")
        new_peers = () if no_peers else (peers or None)
        record = ctx.store().set_session_limits(_target(ctx, target), clearance, new_peers)
        ctx.emit(_session_shape(record), _session_human(record))

    _run(ctx, action)


def _target(ctx: Context, target: str | None) -> str:
    chosen = target or ctx.session_id
    if not chosen:
        raise ValidationError("which session? give --session ID")
    return chosen


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
    help="mcp-memory: export the graph of --agent as a session at this level sees it.",
)
@click.pass_obj
def export_(
    ctx: Context, file: str | None, fmt: str, agents: str | None, levels: str | None, level: str
) -> None:
    """Write every live memory (all levels), then transcripts and usage, as JSON Lines to FILE or stdout;
    the memories as Markdown to a directory; or the graph as an MCP memory file (operator)."""

    def action() -> None:
        store = ctx.store()
        if file is not None and fmt != "markdown" and os.path.isdir(file):
            raise ValidationError(
                f"{file} is a directory; JSON Lines go to a file (or use --format markdown)"
            )
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
                count = export_markdown(memories, file)
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

    _run(ctx, action)


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
@click.pass_obj
def import_(ctx: Context, file: str, fmt: str, no_scan: bool, level: str | None) -> None:
    """Import JSON Lines or a Markdown directory, levels kept, or an MCP memory graph or another store's files at
    one level; one bad or poisoned line, record or file imports nothing (operator)."""

    def action() -> None:
        store = ctx.store()
        if fmt not in _BUILT_IN_FORMATS:
            memories = _read_foreign(ctx, store, file, fmt, level)
            click.echo(
                f"stratamem import: read {len(memories)} memories from {file}; screening and writing",
                err=True,
            )
            count = _import(store, memories, no_scan)
            ctx.emit({"imported": count}, f"imported {count} memories")
            return
        if fmt != "markdown" and os.path.isdir(file):
            raise ValidationError(f"{file} is a directory; use --format markdown to import one")
        if fmt == "mcp-memory":
            from pathlib import Path

            from .importers.sources import read_text  # bounded; invalid UTF-8 named by line and byte

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
                f"imported {nodes} nodes and {edges} relations at {Level.parse(graph_level).name}",
            )
            return
        if fmt == "markdown":
            memories, turns = read_markdown(file, store.max_content_bytes, store.now()), list[Any]()
        elif file == "-":
            memories, turns = read_records(_stdin_text(), store.max_content_bytes)
        else:
            with open(file, encoding="utf-8", errors="surrogateescape") as stream:
                memories, turns = read_records(stream, store.max_content_bytes)
        count = _import(store, memories, no_scan, turns)
        ctx.emit({"imported": count}, f"imported {count} memories")

    _run(ctx, action)


def _import(store: Store, memories: list[Any], no_scan: bool, turns: Sequence[Any] = ()) -> int:
    """Every format's memories (and an export's turn records) through the gate and one batch
    transaction, a bar on a terminal; then, for a store that searches by meaning, what to run next."""
    with reporter("importing") as progress:
        count = store.import_memories(memories, scan=not no_scan, progress=progress, turns=turns)
    if count > CATCH_UP and store.semantic.mode != "lexical":
        # An import writes no vectors (saves pay no inference); without this a user meets the backlog as
        # searches that each embed CATCH_UP memories first, seconds apiece, until it is worked off.
        click.echo(
            f"stratamem import: the {count} memories have no vectors yet for search by meaning; "
            f"`stratamem reindex` embeds them all now (until then each search embeds up to {CATCH_UP} "
            "of its own first, seconds a search)",
            err=True,
        )
    return count


def _read_foreign(ctx: Context, store: Store, file: str, fmt: str, level: str | None) -> list[Any]:
    """Another store's files as memories at the operator's agent and level (nothing written yet)."""
    from pathlib import Path

    from .importers import Target, get_format

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
            count = ctx.store().reindex(progress=progress, force=force)
        embedder = ctx.store().semantic.embedder  # loaded by reindex, which refuses a store without one
        ctx.emit(
            {"reindexed": count, "model": embedder.identity if embedder is not None else None},
            f"{count} memories embedded",
        )

    _run(ctx, action)


@cli.command()
@click.pass_obj
def demo(ctx: Context) -> None:
    """A short narrated session on a fresh store: levels, shadowing and search."""
    from .demo import run_demo

    run_demo(ctx.db)


@cli.command()
@click.option(
    "--host", help="Address to listen on (default 127.0.0.1; a non-loopback address needs --config)."
)
@click.option("--port", type=int, help="Port to listen on (default 8765).")
@click.option(
    "--config",
    "config_path",
    envvar="STRATAMEM_CONFIG",
    type=click.Path(exists=True, dir_okay=False),
    help="Server config (TOML): principals, policy, turn prices/budgets, retention.",
)
@click.option(
    "--workers",
    type=int,
    help="Processes running the memory tool calls of REST and MCP (default 1: in the server's own process; "
    "[server] workers in --config).",
)
@click.pass_obj
def serve(
    ctx: Context, host: str | None, port: int | None, config_path: str | None, workers: int | None
) -> None:
    """Serve memory over HTTP: MCP at /mcp, REST at /v1, docs at /docs."""
    from .server import require_extra, run_serve

    def action() -> None:
        require_extra()
        _say_location(ctx)
        run_serve(
            ctx.db or default_url(),
            host=host,
            port=port,
            config_path=config_path,
            agent=ctx.agent,
            workers=workers,
        )

    _run(ctx, action)


def _say_location(ctx: Context) -> None:
    """Name the database on stderr (stdout may be a protocol stream)."""
    click.echo(f"stratamem: database {location(ctx.db)}", err=True)


@cli.command("mcp")
@click.option("--agent", "mcp_agent", help="Agent id [env STRATAMEM_AGENT; default main].")
@click.option(
    "--clearance", help="Highest level the session may reach [env STRATAMEM_CLEARANCE; default RESTRICTED]."
)
@click.option(
    "--peer",
    "peers",
    multiple=True,
    help="Agent whose memories may be read (repeatable) [env STRATAMEM_PEERS].",
)
@click.option("--taint", "mcp_taint", help="Starting taint [env STRATAMEM_TAINT; default PUBLIC].")
@click.option("--session", "mcp_session", help="Open or resume this session id [env STRATAMEM_SESSION].")
@click.option(
    "--profile",
    type=click.Choice(["triggerfish", "zeroclaw", "mcp-memory"]),
    help="Tool profile [env STRATAMEM_PROFILE].",
)
@click.option(
    "--read-only", "read_only", is_flag=True, default=None, help="Offer and allow no writing tools."
)
@click.option(
    "--turns",
    "turns",
    is_flag=True,
    default=None,
    help="Also serve the runtime's turn tools (turn_begin ... transcript, as /mcp-turns) [env STRATAMEM_TURNS].",
)
@click.option(
    "--config",
    "config_path",
    envvar="STRATAMEM_CONFIG",
    type=click.Path(exists=True, dir_okay=False),
    help="Config file (TOML) with [mcp], [turns] and [retention] tables.",
)
@click.pass_obj
def mcp(
    ctx: Context,
    mcp_agent: str | None,
    clearance: str | None,
    peers: tuple[str, ...],
    mcp_taint: str | None,
    mcp_session: str | None,
    profile: str | None,
    read_only: bool | None,
    turns: bool | None,
    config_path: str | None,
) -> None:
    """Serve the memory tools over MCP stdio, for one operator-chosen session (--turns: the turn tools too)."""
    from .server import require_extra, run_mcp

    # an explicit empty value ("--agent ''") is kept, so validation refuses it instead of defaulting
    flags = {
        "agent": _given(mcp_agent, ctx.agent),
        "clearance": clearance,
        "peers": peers,
        "taint": _given(mcp_taint, ctx.taint),
        "session": _given(mcp_session, ctx.session_id),
        "profile": profile,
        "read_only": read_only,
        "turns": turns,
    }

    def action() -> None:
        require_extra()
        _say_location(ctx)
        run_mcp(ctx.db or default_url(), flags, config_path)

    _run(ctx, action)


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
    from .migrate import migrate

    def action() -> None:
        count = migrate(
            from_url, to_url, languages=languages or None, progress=lambda rows: tracked(rows, "copying rows")
        )
        ctx.emit({"migrated": count}, f"migrated {count} rows")

    _run(ctx, action)


@cli.command("config")
@click.pass_obj
def config_(ctx: Context) -> None:
    """Print the resolved version, paths, settings and a ready mcpServers snippet for this install."""

    def action() -> None:
        info = describe(ctx.db, ctx.agent)
        if ctx.as_json:
            click.echo(shapes.dumps(info))
            return
        extras = ", ".join(f"{name} {'yes' if ok else 'no'}" for name, ok in info["extras"].items())
        lines = [
            f"version  {info['version']}",
            f"python   {info['python']}",
            f"home     {info['home']}",
            f"db       {info['db']} ({info['backend']})",
            f"token    {info['server_token']} (serve's development token, when it runs without --config)",
            f"extras   {extras}",
        ]
        lines += [f"env      {name}={value}" for name, value in info["env"].items()]
        lines += [
            "",
            "MCP client config (Claude Desktop and any mcpServers client):",
            json.dumps(info["mcp"], indent=2, ensure_ascii=False),
        ]
        click.echo(shapes.printable("\n".join(lines)))

    _run(ctx, action)


# Global options, also accepted after the command ("stratamem list --json"): name, flags, is_flag, help.
_GLOBALS = (
    ("db", "--db", False, "Store URL (as before the command)."),
    ("agent", "--agent", False, "Agent id (as before the command)."),
    ("taint", "--taint", False, "Raise the session's taint first (as before the command)."),
    ("session_id", "--session", False, "Resume this session id (as before the command)."),
    ("as_json", "--json", True, "Print the tools' JSON shapes (as before the command)."),
)


def _accept_globals(command: click.Command) -> None:
    """Give every leaf command the global options it does not define itself; the later one wins."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _accept_globals(sub)
        return
    taken = {flag for param in command.params for flag in getattr(param, "opts", ())}
    added = [g for g in _GLOBALS if g[1] not in taken]
    for field, flag, is_flag, help_text in added:
        command.params.append(
            click.Option(
                [flag, f"_global_{field}"], is_flag=is_flag, default=None, help=help_text, hidden=True
            )
        )
    callback = command.callback
    assert callback is not None

    @functools.wraps(callback)
    def merged(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context().find_object(Context)
        for field, _flag, _is_flag, _help in added:
            value = kwargs.pop(f"_global_{field}", None)
            if ctx is not None and value not in (None, False):
                setattr(ctx, field, value)
        return callback(*args, **kwargs)

    command.callback = merged


_accept_globals(cli)


def main() -> None:
    cli(prog_name="stratamem")


if __name__ == "__main__":
    main()
