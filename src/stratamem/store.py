"""Opening a store: where the database is, which backend serves it, store-wide options.

A ``Store`` is the operator's handle (sessions, purge, import/export, audit);
agents only ever get a ``Session`` from it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import platformdirs

from .audit import AuditDraft
from .audit_anchor import AuditAnchor
from .budget import resolve_max_answer_chars
from .declassify import DEFAULT_APPROVAL_TTL, Ask, Declassification, Declassifier
from .errors import StorageError, ValidationError
from .labels import Label, compartment_set
from .levels import Level
from .models import AuditEvent, Memory, PurgeResult
from .private import make_private_dirs
from .save_many import DEFAULT_MAX_BATCH, check_max_batch
from .search.semantic import SemanticIndex
from .session import Session
from .storage import audit_store, graph_store, server_state, session_store, turn_store
from .storage.compartment_store import Registry
from .storage.protocol import Backend
from .storage.records import SessionRecord, SessionRequest
from .storage.sql.audit_pages import AuditQuery
from .storage.sql.transcripts import TranscriptMessage, UsageRecord
from .storage.sqlite.backend import SQLiteBackend
from .text import Analyzer
from .turn.retention import Retention
from .validation import DEFAULT_MAX_CONTENT_BYTES, check_agent_id, check_id, check_peers, check_time

TurnRecord = TranscriptMessage | UsageRecord

if TYPE_CHECKING:
    from .policy.engine import Policy
    from .turn.observe import Observer

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


def default_home() -> Path:
    return Path(os.environ.get("STRATAMEM_HOME") or platformdirs.user_data_dir("stratamem"))


def default_url() -> str:
    return os.environ.get("STRATAMEM_DB") or str(default_home() / "memory.db")


def sqlite_path(url: str) -> str:
    """A plain path, a ``sqlite:///`` URL or ``:memory:`` to what sqlite3 opens.

    SQLAlchemy's rule: what follows ``sqlite:///`` is the path, so ``sqlite:///data/m.db`` is relative to
    the working directory and ``sqlite:////srv/m.db`` (four slashes) is absolute.
    """
    if url == ":memory:" or url == "sqlite://" or url == "sqlite:///:memory:":
        return ":memory:"
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        if not path:
            raise ValidationError("a sqlite:/// URL names a file: sqlite:///relative.db or sqlite:////abs.db")
        return path
    if "://" in url:
        raise ValidationError(
            f"unsupported store URL {url!r}; use a path, sqlite:///relative.db, sqlite:////abs.db, :memory:, "
            "markdown:///dir or postgresql://"
        )
    return url


def missing_store(url: str) -> str | None:
    """The path a store URL names when nothing is there yet (None: a store, memory, or a server's URL).

    Opening a store creates it; a command that only reads asks this first, so a mistyped path is an
    error instead of a new empty store.
    """
    if url.startswith(("postgresql://", "postgres://")):
        return None  # a server's schema: opening checks the connection
    path = markdown_location(url)[0] if url.startswith(MARKDOWN_SCHEME) else sqlite_path(url)
    if path == ":memory:" or Path(path).exists():
        return None
    return str(Path(path).absolute())


def check_url(url: object) -> str:
    """A store URL or path that the backends can open: text, no NUL, encodable for the OS or the server."""
    if not isinstance(url, str):
        raise ValidationError("the store URL must be a string")
    if "\x00" in url:
        raise ValidationError("the store URL must not contain a NUL character")
    try:
        if url.startswith(("postgresql://", "postgres://")):
            url.encode("utf-8")
        else:
            os.fsencode(url)  # a path from a shell may hold undecodable bytes (surrogateescape)
    except UnicodeEncodeError:
        raise ValidationError("the store URL is not valid text for this system") from None
    return url


MARKDOWN_SCHEME = "markdown://"
_MARKDOWN_OPTIONS = {"scan_interval": float, "max_file_bytes": int}


def markdown_location(url: str) -> tuple[str, dict[str, Any]]:
    """``markdown:///abs/dir`` (or ``markdown://relative/dir``), with optional ``?scan_interval=S&max_file_bytes=N``."""
    rest = url.removeprefix(MARKDOWN_SCHEME)
    path, _, query = rest.partition("?")
    if not path:
        raise ValidationError("a markdown:// URL names a directory, e.g. markdown:///home/me/memory")
    options: dict[str, Any] = {}
    for name, values in parse_qs(query, keep_blank_values=True).items():
        if name not in _MARKDOWN_OPTIONS:
            raise ValidationError(
                f"unknown markdown store option {name!r}; options are {', '.join(_MARKDOWN_OPTIONS)}"
            )
        try:
            options[name] = _MARKDOWN_OPTIONS[name](values[-1])
        except ValueError:
            raise ValidationError(f"markdown store option {name} must be a number") from None
        if not options[name] >= 0:
            raise ValidationError(f"markdown store option {name} must not be negative")
    return path, options


def _synchronous(value: str) -> str:
    if not isinstance(value, str) or value.upper() not in ("NORMAL", "FULL"):
        raise ValidationError("synchronous must be NORMAL or FULL")
    return value.upper()


class Store:
    """The operator's handle on one memory store."""

    def __init__(
        self,
        url: str | None = None,
        *,
        languages: Sequence[str] = ("english",),
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        synchronous: str = "NORMAL",
        clock: Clock = utcnow,
        backend: Backend | None = None,
        retention: Retention | None = None,
        observers: Iterable[Observer] = (),
        search_mode: str | None = None,
        embedder: object = "default",
        max_batch: int = DEFAULT_MAX_BATCH,
        max_answer_chars: int | None = None,
        require_approval: bool = False,
        approval_ttl: timedelta | float = DEFAULT_APPROVAL_TTL,
    ) -> None:
        self.url = check_url(url or default_url())
        languages = _languages(languages)
        if (
            isinstance(max_content_bytes, bool)
            or not isinstance(max_content_bytes, int)
            or max_content_bytes < 1
        ):
            raise ValidationError("max_content_bytes must be a positive integer")
        if not isinstance(synchronous, str):
            raise ValidationError("synchronous must be NORMAL or FULL")
        self.retention = retention if retention is not None else Retention()
        if not isinstance(self.retention, Retention):
            raise ValidationError("retention must be a stratamem.turn.retention.Retention")
        from .turn.observe import EventBus  # the turn package imports this module
        from .turn.tail_cache import TailCache

        self.turn_tails = TailCache()  # each session's newest transcript messages, between prompts

        # Observer events (scrubbed, bounded) of every path: turns, tools, MCP, REST.
        self.events = EventBus(observers)
        self.analyzer = Analyzer(languages)
        self.semantic = SemanticIndex(self, embedder, search_mode)
        self.max_content_bytes = max_content_bytes
        self.max_batch = check_max_batch(max_batch)  # the most items one save_many may write
        # The most characters one tool answer holds (budget.py); None: STRATAMEM_MAX_ANSWER_CHARS or 50,000.
        self.max_answer_chars = resolve_max_answer_chars(max_answer_chars)
        self.clock = clock
        if backend is not None:
            self.backend = backend
        elif self.url.startswith(MARKDOWN_SCHEME):
            from .storage.markdown.backend import MarkdownBackend

            path, options = markdown_location(self.url)
            self.backend = MarkdownBackend(
                path,
                self.analyzer,
                clock=self.now,
                synchronous=_synchronous(synchronous),
                max_content_bytes=max_content_bytes,
                **options,
            )
        elif self.url.startswith(("postgresql://", "postgres://")):
            from .extras import require

            require("postgres")  # a clear install hint, never a ModuleNotFoundError
            from .storage.postgres.backend import PostgresBackend

            self.backend = PostgresBackend(self.url, self.analyzer)
        else:
            path = sqlite_path(self.url)
            if path != ":memory:":
                try:
                    make_private_dirs(Path(path).parent)
                except OSError as exc:
                    raise StorageError(f"cannot create the directory for {path}: {exc}") from exc
            self.backend = SQLiteBackend(path, self.analyzer, synchronous=_synchronous(synchronous))
        # the store's compartments: names the operator defined, the bit each holds in a label
        self.compartments = Registry(self.backend, self.now)
        # declassification (``declassify.py``): with ``require_approval`` a second operator approves each
        self.declassifier = Declassifier(self, require_approval, approval_ttl)

    def now(self) -> datetime:
        return self.clock()

    @property
    def search_mode(self) -> str:
        """The mode ``session.search`` uses when a call names none (``hybrid`` with the semantic extra)."""
        return self.semantic.mode

    def reindex(self, progress: Callable[[int, int], None] | None = None, force: bool = False) -> int:
        """Embed every live memory that has no vector from the current model (all of them with ``force``)."""
        return self.semantic.reindex(progress, force)

    # sessions -------------------------------------------------------------
    def session(
        self,
        agent_id: str = "main",
        session_id: str | None = None,
        clearance: Level | str | None = None,
        peers: Sequence[str] | None = None,
        *,
        owner: str | None = None,
        compartments: Iterable[str] | None = None,
    ) -> Session:
        """Open a new session at PUBLIC, or resume one by id with its persisted taint.

        A new session gets ``clearance`` (default RESTRICTED) and ``peers``
        (default none), fixed from then on. A resume keeps the session's own
        clearance and peers: leave them ``None``, or give the same ones; asking
        for others raises ``ClearanceError`` (use :meth:`set_session_limits`).
        The agent must match. ``owner`` names the server principal creating
        the session (``None``: the operator); resuming with an owner refuses
        another owner's session as NOT_FOUND. ``compartments``: the compartments the clearance
        includes (names the operator defined, ``define_compartments``; default none): the session may
        ``enter`` these and no others. ``clearance`` may also be a label such as ``"CONFIDENTIAL+HR"``.
        """
        agent_id = check_agent_id(agent_id)
        label = None if clearance is None else Label.parse(clearance)
        level = None if label is None else label.level
        named = compartment_set(compartments) | (label.compartments if label is not None else frozenset())
        if session_id is not None:
            session_id = check_id(session_id, "session id")
        asked = SessionRequest(
            agent_id, session_id, level, check_peers(peers), owner, compartments=self.compartments.mask(named)
        )
        record = self.backend.open_session(asked, self.now())
        return Session(self, record.id)

    def define_compartments(self, *names: str) -> tuple[str, ...]:
        """Define compartments (operator action, audited; names are trimmed and upper-cased, a letter then
        letters, digits, ``_`` or ``-``): a store holds at most 61, a label at most 16. Defining a name
        again changes nothing. Returns every defined name in the order they were defined."""
        return self.compartments.define(names, self.now())

    def set_session_limits(
        self, session_id: str, clearance: Level | str | None = None, peers: Sequence[str] | None = None
    ) -> SessionRecord:
        """Change a session's clearance and/or peers (operator action, audited as an operator event).

        ``None`` keeps the current value. Refused with ``ClearanceError`` when
        the session's taint is already above the new clearance (reset it).
        """
        if not isinstance(session_id, str):
            raise ValidationError("session id must be a string")
        level = None if clearance is None else Level.parse(clearance)
        return session_store.set_limits(self.backend, session_id, level, check_peers(peers), self.now())

    # operator actions -------------------------------------------------------
    def declassify(
        self,
        agent_id: str,
        key: str,
        from_label: Label | str,
        to_label: Label | str,
        reason: str,
        *,
        actor: str = "operator",
        approver: str | None = None,
        replacement: str | None = None,
    ) -> Declassification:
        """Write a new version of ``key`` (live at exactly ``from_label``) at the strictly lower ``to_label``,
        same lineage, the original kept; ``replacement`` is a redacted text to write instead of the content.
        Audited as ``declassify``. With ``require_approval`` and no ``approver`` it is a pending request
        (its ``id`` for :meth:`approve_declassification`). See ``stratamem.declassify``."""
        return self.declassifier.declassify(
            Ask(agent_id, key, from_label, to_label, reason, actor, approver, replacement)
        )

    def approve_declassification(
        self, request_id: int, approver: str, now: datetime | None = None
    ) -> Declassification:
        """Perform a pending request, approved by an operator other than the one who asked."""
        return self.declassifier.approve(request_id, approver, now)

    def deny_declassification(
        self, request_id: int, by: str, now: datetime | None = None
    ) -> Declassification:
        """Refuse a pending request."""
        return self.declassifier.deny(request_id, by, now)

    def declassifications(
        self, status: str | None = None, *, limit: int = 100, before: int | None = None
    ) -> tuple[list[Declassification], int | None]:
        """Requests and downgrades performed, newest first (``status``: pending, done, denied, expired), one
        page of at most ``limit`` and the ``before`` of the next page (None: the last page)."""
        return self.declassifier.page(status, limit, before)

    def purge(self, before: datetime, agent_id: str | None = None) -> PurgeResult:
        """Hard-delete soft-deleted and expired records older than ``before``; returns how many (an int).

        Transcript messages and usage records past their retention (``self.retention``)
        go in the same purge and count in the result.

        The result's ``erased`` is False when another reader kept purge from
        erasing the bytes from the store's files within a short bounded wait;
        ``remaining`` then says what holds them and how to finish, and a
        ``RuntimeWarning`` says the same. Purge never blocks the store behind a reader.
        """
        before = check_time(before, "before")
        if agent_id is not None:
            agent_id = check_agent_id(agent_id)
        now = self.now()
        messages_before, usage_before = self.retention.cutoffs(before, now)
        messages, usage = turn_store.purge_turns(self.backend, messages_before, usage_before, agent_id, now)
        server_state.purge(self.backend, now)  # expired server bookkeeping (no memory content, not counted)
        memories = self.backend.purge(before, agent_id, now)  # its file erasure covers the turn rows too
        result = PurgeResult(int(memories) + messages + usage, memories.erased, memories.remaining)
        if not result.erased:
            warnings.warn(
                f"purge removed {int(result)} record(s), but {result.remaining}", RuntimeWarning, stacklevel=2
            )
        return result

    # the turn's records (operator side; sessions read through ``stratamem.turn``) --------
    def export_turns(self, agent_id: str | None = None) -> Iterator[TranscriptMessage | UsageRecord]:
        """Every transcript message and usage record (of one agent), for JSON Lines export."""
        names = self.compartments.names_of
        records = turn_store.export_turns(self.backend, agent_id, self.now())  # the event is recorded now
        return iter(
            [r if r.label_code < 4 else replace(r, compartments=names(r.label_code)) for r in records]
        )

    def import_turns(self, records: Iterable[TranscriptMessage | UsageRecord]) -> int:
        return turn_store.import_turns(self.backend, [self.labelled_turn(r) for r in records], self.now())

    def labelled_turn(self, record: TurnRecord) -> TurnRecord:
        """A transcript or usage record with the stored integer of its label (``labelled``'s rule)."""
        if not record.compartments and record.label_code >= 4:
            raise ValidationError("a transcript record holds a label whose compartments are not named")
        code = self.compartments.encode(Label(record.level, record.compartments))
        return record if code == record.label_code else replace(record, label_code=code)

    def usage(
        self,
        agent_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 1000,
    ) -> list[UsageRecord]:
        """Usage records across every level (operator accounting), oldest first, at most ``limit``."""
        return turn_store.usage_records(
            self.backend, None, agent_id, since, until, max(1, min(int(limit), 100_000))
        )

    def export(self, agent_id: str | None = None) -> Iterator[Memory]:
        if agent_id is not None:
            agent_id = check_agent_id(agent_id)
        # each record with its compartments' names: an export line carries the label, not its bits
        return map(self.compartments.named, self.backend.export(agent_id, self.now()))

    def import_memories(
        self,
        memories: Iterable[Memory],
        *,
        scan: bool = True,
        policy: Policy | None = None,
        turns: Iterable[TranscriptMessage | UsageRecord] = (),
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Import memories (levels kept), all or nothing, through the policy gate.

        The gate (``policy.gate.screen_import``) runs the poisoning scanner and the
        operator's rules on each memory; ``scan=False`` is the operator's explicit
        opt-out (for a trusted backup of this very store). The whole import is one
        transaction on the backend's batch path (one audit event per record);
        ``turns`` (the transcript and usage lines of the same export) are written in
        that same transaction: a record that fails leaves no memory imported, and the
        other way round. ``progress(done, total)`` follows the screening, the slow part.
        """
        memories = [self.labelled(m) for m in memories]
        if scan:
            from .policy.gate import screen_import

            memories = screen_import(self, memories, policy, progress=progress)
        count = self.backend.import_memories(memories, self.now(), [self.labelled_turn(t) for t in turns])
        if progress is not None:
            progress(count, count)
        return count

    def labelled(self, memory: Memory) -> Memory:
        """``memory`` with the stored integer of its label (level and compartments, named as this store
        defines them): what an import writes. A compartment the store does not define is refused
        (VALIDATION_ERROR), never dropped: a record kept at its level alone would be readable without it."""
        if not memory.compartments and memory.label_code >= 4:  # bits no name was given for: not guessed
            raise ValidationError(f"memory {memory.key!r} holds a label whose compartments are not named")
        code = self.compartments.encode(memory.label)
        return memory if code == memory.label_code else replace(memory, label_code=code)

    def audit_events(
        self,
        clearance: Level | Label | str = Level.RESTRICTED,
        lineage_id: str | None = None,
        *,
        owner: str | None = None,
        after: int | None = None,
        before: int | None = None,
        limit: int | None = None,
    ) -> list[AuditEvent]:
        """Audit events a reader may see, oldest first (``storage.audit_query`` states the rule).

        ``clearance`` caps the events' label (a level, or ``"CONFIDENTIAL+HR"``: an event of a
        compartmented taint needs its compartments; operator events count as RESTRICTED); ``owner`` reads as that server principal — only its own
        sessions' events — instead of as the operator. ``after`` pages forward
        from a sequence number; otherwise ``limit`` takes the newest events
        (``before`` pages backwards).
        """
        return audit_store.events(
            self.backend,
            AuditQuery(self._clearance_code(clearance), owner, _lineage(lineage_id), after, before, limit),
        )

    def _clearance_code(self, clearance: Level | Label | str) -> int:
        """A reader's clearance as storage keeps labels (compartment names through the registry)."""
        label = Label.parse(clearance)
        return self.compartments.encode(label) if label.compartments else int(label.level)

    def audit_page(
        self,
        limit: int,
        clearance: Level | Label | str = Level.RESTRICTED,
        lineage_id: str | None = None,
        *,
        owner: str | None = None,
        after: int | None = None,
        before: int | None = None,
    ) -> tuple[list[AuditEvent], bool]:
        """One bounded page of :meth:`audit_events` and whether more exist (continue with ``after=``
        the last sequence when paging forward, ``before=`` the first when paging back from the newest)."""
        return audit_store.page(
            self.backend,
            AuditQuery(self._clearance_code(clearance), owner, _lineage(lineage_id), after, before, limit),
        )

    def import_graph(
        self,
        path_or_lines: str | Path | Iterable[str],
        agent_id: str = "main",
        level: Level | str = Level.PUBLIC,
        *,
        scan: bool = True,
    ) -> tuple[int, int]:
        """Import an MCP memory server ``memory.jsonl`` at an operator-chosen agent and level, all or nothing.

        Returns (nodes created, edges created). Entities already present at that
        level gain the observations they lack; nothing is written if any line is bad
        or (unless ``scan=False``) carries what the poisoning scanner refuses.
        """
        from .graph.mcp_memory import parse_lines, screen
        from .storage.sql import graph_write

        agent_id, chosen = check_agent_id(agent_id), self._clearance_code(level)
        if isinstance(path_or_lines, (str, Path)):
            from .importers.sources import read_text  # bounded; invalid UTF-8 named by line and byte

            lines = read_text(Path(path_or_lines)).split("\n")
        else:
            lines = list(path_or_lines)
        entities, relations = parse_lines(lines, self.max_content_bytes)
        if scan:
            screen(entities, relations)
        now = self.now()
        return graph_store.operator(
            self.backend,
            now,
            lambda gc: graph_write.import_graph(
                gc, self.analyzer, agent_id, chosen, entities, relations, now
            ),
        )

    def export_graph(self, agent_id: str = "main", level: Level | str = Level.PUBLIC) -> Iterator[str]:
        """The graph of ``agent_id`` as a session at ``level`` sees it, as MCP memory server JSON Lines.

        Levels are not in that format (each line is what the reader at ``level`` sees); export at the
        level you will import the file at. Audited as an operator ``graph.export``.
        """
        from .graph.mcp_memory import export_lines
        from .storage.sql import graph_read

        agent_id, chosen = check_agent_id(agent_id), self._clearance_code(level)
        now = self.now()
        return iter(
            graph_store.operator(
                self.backend, now, lambda gc: graph_read.export_view(gc, agent_id, chosen, now, export_lines)
            )
        )

    def audit(self, draft: AuditDraft) -> AuditEvent:
        """Append an event (policy decisions and other runtime records)."""
        return audit_store.append(self.backend, draft, self.now())

    def verify_audit(self, anchor: AuditAnchor | None = None) -> int | None:
        """The first bad sequence number of the audit chain, or None when intact.

        Without ``anchor``, events cut off the end together with the store's
        head record go unnoticed; with one (see ``audit_anchor``), every event
        up to the anchored sequence must be present and unchanged.
        """
        return audit_store.verify(self.backend, None if anchor is None else (anchor.seq, anchor.hash))

    def audit_anchor(self) -> AuditAnchor:
        """Anchor the audit chain at its newest event, after checking the chain up to it is intact.

        Keep the result (``anchor.dumps(key)``) where the store's writers cannot change it.
        """
        seq, digest = audit_store.tip(self.backend)
        bad = audit_store.verify(self.backend, (seq, digest))
        if bad is not None:
            raise StorageError(f"audit log broken at sequence {bad}; an anchor would vouch for a damaged log")
        return AuditAnchor(seq, digest, self.now().isoformat())

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _languages(languages: object) -> tuple[str, ...]:
    if isinstance(languages, (str, bytes)) or not isinstance(languages, Iterable):
        raise ValidationError("languages must be a list of language names, e.g. ['english']")
    names = tuple(languages)
    if not all(isinstance(name, str) for name in names):
        raise ValidationError("languages must be a list of language names, e.g. ['english']")
    return names


def _lineage(lineage_id: object) -> str | None:
    return None if lineage_id is None else check_id(lineage_id, "lineage id")


def open_store(url: str | None = None, **options: Any) -> Store:
    return Store(url, **options)
