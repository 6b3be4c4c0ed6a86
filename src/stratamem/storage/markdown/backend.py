"""The Markdown backend: memory content in Markdown files people can read, edit, grep and keep in git.

``<dir>/<agent>/<LABEL>/...md`` hold every live memory version (layout and
format: ``format``). Everything else — sessions, taint, the audit chain,
the search index, soft-deleted versions until purge, and whatever other
features keep in the SQLite backend — lives in the sidecar
``<dir>/.stratamem/index.db``, a plain ``SQLiteBackend`` this class composes.
Every operation runs on the sidecar; ``sync.FileSync`` keeps the files and
the sidecar saying the same thing:

- Writes (save, delete, import, purge, restore, a console restore) take the directory lock
  (``flock``, ``sidecar.DirLock``), apply pending hand edits, run on the sidecar
  (one transaction), then render the files they touched. Triggers on
  ``memories`` record which files a transaction touched in ``md_dirty``
  (``tables``) *inside that transaction*, so a process killed between the
  commit and the file writes leaves a note the next opener (under the lock)
  finishes: nothing is lost or half-written.
- Hand edits are found by a cheap scan (size and mtime per file, then a hash)
  on open, before every write, and before reads at most every
  ``scan_interval`` seconds; ``reconcile`` applies them as audited operator acts.
- Without a sidecar, opening rebuilds it from the files (sessions and audit
  start empty: they never lived in the files).

Every ``Backend`` method is written out here (mypy holds the class to the
protocol): those that keep no content in the files go to the sidecar after
hand edits are applied, like every read. The sidecar is driven through its
public transaction seam (``read``/``write``/``operator``), never its internals.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ...audit import AuditDraft
from ...errors import StorageError
from ...levels import Level
from ...models import AuditEvent, Hit, Memory, PurgeResult
from ...paging import ListQuery, Page
from ...private import make_private_dirs
from ...scope import OWN, Conversations
from ...text import Analyzer
from ..records import MemoryDraft, SearchRequest, SessionRecord, SessionRequest
from ..sql.declassification import Order
from ..sql.transcripts import (
    TranscriptMessage,
    UsageRecord,
)
from ..sqlite.backend import SQLiteBackend
from ..transaction import Body
from ..vectors import Pending
from . import files, sidecar, tables
from . import format as fmt
from .sync import FileSync

if TYPE_CHECKING:
    from ..vectors import VectorItem

T = TypeVar("T")


class MarkdownBackend:
    """Implements ``storage.protocol.Backend`` on a directory of Markdown files plus a SQLite sidecar."""

    def __init__(
        self,
        root: str,
        analyzer: Analyzer,
        *,
        clock: Callable[[], datetime],
        synchronous: str = "NORMAL",
        max_content_bytes: int = 64 * 1024,
        max_file_bytes: int = files.DEFAULT_MAX_FILE_BYTES,
        scan_interval: float = 1.0,
    ) -> None:
        try:
            make_private_dirs(root)
            self.root = os.path.realpath(root)
            self._sidecar = os.path.join(self.root, fmt.SIDECAR_DIR)
            self._sidecar_fd = sidecar.open_sidecar(self.root)
        except OSError as exc:
            raise StorageError(f"cannot open the Markdown store at {root}: {exc}") from exc
        try:
            self._lock = sidecar.DirLock(self._sidecar_fd, self._sidecar)
        except BaseException:
            os.close(self._sidecar_fd)
            raise
        self.analyzer = analyzer
        self.clock = clock
        try:
            with self._lock.held():
                sidecar.check_open(self._sidecar, self._sidecar_fd, create=True)
                self.db = SQLiteBackend(sidecar.index_path(self.root), analyzer, synchronous=synchronous)
                sidecar.check_open(
                    self._sidecar, self._sidecar_fd
                )  # what SQLite opened by name is still ours
                self.db.operator(tables.untimed(), tables.create_tables)
                self._sync = FileSync(
                    self.root,
                    self._sidecar,
                    self._sidecar_fd,
                    self._lock,
                    self.db,
                    clock=clock,
                    max_content_bytes=max_content_bytes,
                    max_file_bytes=max_file_bytes,
                    scan_interval=scan_interval,
                )
                files.sweep_temporaries(self.root)
                self._sync.settle()
        except BaseException:
            if "db" in self.__dict__:
                self.db.close()
            self._lock.close()
            os.close(self._sidecar_fd)
            raise

    # ------------------------------------------------------------------ keeping files and sidecar together

    @property
    def problems(self) -> builtins.list[dict[str, Any]]:
        """Every problem the scans found so far (file, line, error), each once."""
        return self._sync.problems

    def rescan(self) -> builtins.list[dict[str, Any]]:
        """Apply hand edits now; returns the problems this scan found (file, line, error)."""
        before = len(self.problems)
        with self._lock.held():
            self._sync.settle()
        return self.problems[before:]

    def _fresh(self) -> None:
        """Before a read: apply hand edits if the last scan is older than ``scan_interval``."""
        self._sync.fresh()

    # ------------------------------------------------------------------ the protocol
    # Writes take the directory lock and render their files (``_Writing``); reads apply hand edits first
    # (``_fresh``); both then run on the sidecar.

    # the transaction seam
    def read(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        self._fresh()
        return self.db.read(session_id, now, body)

    def write(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        with _Writing(self):
            return self.db.write(session_id, now, body)

    def operator(self, now: datetime, body: Body[sqlite3.Connection, T], *, read_only: bool = False) -> T:
        if read_only:
            self._fresh()
            return self.db.operator(now, body, read_only=True)
        with _Writing(self):
            return self.db.operator(now, body)

    # memories
    def save_many(self, session_id: str, drafts: Sequence[MemoryDraft], now: datetime) -> list[Memory]:
        with _Writing(self):
            return self.db.save_many(session_id, drafts, now)

    def delete(self, session_id: str, key: str, now: datetime) -> Memory:
        with _Writing(self):
            return self.db.delete(session_id, key, now)

    def import_memories(
        self, memories: Iterable[Memory], now: datetime, turns: Sequence[TranscriptMessage | UsageRecord] = ()
    ) -> int:
        with _Writing(self):
            return self.db.import_memories(memories, now, turns)

    def purge(self, before: datetime, agent_id: str | None, now: datetime) -> PurgeResult:
        with _Writing(self):
            return self.db.purge(before, agent_id, now)

    def restore(self, rows: Iterable[tuple[str, dict[str, Any]]]) -> int:
        with _Writing(self):
            return self.db.restore(rows)

    def get(
        self, session_id: str, key: str, now: datetime, conversations: Conversations = OWN
    ) -> Memory | None:
        self._fresh()
        return self.db.get(session_id, key, now, conversations)

    def list(
        self, session_id: str, query: ListQuery, now: datetime, conversations: Conversations = OWN
    ) -> Page:
        self._fresh()
        return self.db.list(session_id, query, now, conversations)

    def search(self, session_id: str, request: SearchRequest, now: datetime) -> builtins.list[Hit]:
        self._fresh()
        return self.db.search(session_id, request, now)

    def export(self, agent_id: str | None, now: datetime) -> Iterator[Memory]:
        self._fresh()
        return self.db.export(agent_id, now)

    def dump(self) -> Iterator[tuple[str, dict[str, Any]]]:
        self._fresh()
        return self.db.dump()

    # What follows keeps no content in the files: the sidecar's, after hand edits are applied.

    # sessions
    def open_session(self, request: SessionRequest, now: datetime) -> SessionRecord:
        self._fresh()
        return self.db.open_session(request, now)

    def session_record(self, session_id: str) -> SessionRecord:
        self._fresh()
        return self.db.session_record(session_id)

    def escalate(
        self, session_id: str, level: int, reason: str, source: str | None, now: datetime
    ) -> SessionRecord:
        self._fresh()
        return self.db.escalate(session_id, level, reason, source, now)

    # shared bodies (the turn's records, the console's reads): hand edits applied first, then the sidecar's
    # own transactions (no file holds the turn's records)
    @property
    def transactions(self) -> _FreshSidecar:
        return _FreshSidecar(self)

    # the operator console
    def restore_deleted(self, ref: int, clearance: Level, actor: str, now: datetime) -> Memory:
        with _Writing(self):  # a memory comes back: its file is written like any save's
            return self.db.restore_deleted(ref, clearance, actor, now)

    def declassify(self, order: Order, now: datetime) -> tuple[Memory, int]:
        with _Writing(self):  # the new version's file is written like any save's
            return self.db.declassify(order, now)

    # the knowledge graph: the sidecar's graph, hand edits applied first (no file holds it)
    @property
    def graph(self) -> _FreshGraph:
        return _FreshGraph(self)

    # search by meaning: the sidecar's vectors, hand edits applied first (no file holds them)
    @property
    def vectors(self) -> _FreshSidecar:
        return _FreshSidecar(self)

    def close(self) -> None:
        self._sync.release_held()
        self.db.close()
        self._lock.close()
        if self._sidecar_fd >= 0:
            os.close(self._sidecar_fd)
            self._sidecar_fd = -1


class _FreshSidecar:
    """The sidecar's seam and vectors, each call after pending hand edits are applied
    (``MarkdownBackend.transactions`` and ``MarkdownBackend.vectors``)."""

    def __init__(self, backend: MarkdownBackend) -> None:
        self.backend = backend

    def read(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        self.backend._fresh()
        return self.backend.db.read(session_id, now, body)

    def write(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        self.backend._fresh()
        return self.backend.db.write(session_id, now, body)

    def operator(self, now: datetime, body: Body[sqlite3.Connection, T], *, read_only: bool = False) -> T:
        self.backend._fresh()
        return self.backend.db.operator(now, body, read_only=read_only)

    def append_audit(self, draft: AuditDraft, now: datetime) -> AuditEvent:
        """A read's event, recorded right after the read (which applied the hand edits)."""
        return self.backend.db.append_audit(draft, now)

    def erase_deleted(self, tables: str) -> str:
        return self.backend.db.erase_deleted(tables)

    def use_embedder(self, identity: str, reset: bool = False) -> None:
        self.backend._fresh()
        self.backend.db.vectors.use_embedder(identity, reset)

    def pending_vectors(
        self, session_id: str, limit: int, now: datetime, conversations: Conversations = OWN
    ) -> list[Pending]:
        self.backend._fresh()
        return self.backend.db.vectors.pending_vectors(session_id, limit, now, conversations)

    def all_pending_vectors(self, limit: int) -> tuple[list[Pending], int]:
        self.backend._fresh()
        return self.backend.db.vectors.all_pending_vectors(limit)

    def store_vectors(self, model: str, items: Sequence[VectorItem]) -> int:
        self.backend._fresh()
        return self.backend.db.vectors.store_vectors(model, items)


class _FreshGraph:
    """The sidecar's graph transactions, each after pending hand edits are applied (``MarkdownBackend.graph``)."""

    def __init__(self, backend: MarkdownBackend) -> None:
        self.backend = backend

    def write(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        self.backend._fresh()
        return self.backend.db.graph.write(session_id, now, body)

    def read(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, tuple[T, AuditDraft]]) -> T:
        self.backend._fresh()
        return self.backend.db.graph.read(session_id, now, body)

    def operator(self, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        self.backend._fresh()
        return self.backend.db.graph.operator(now, body)


class _Writing:
    """A write: the directory lock, pending hand edits first, then the change, then its files."""

    def __init__(self, backend: MarkdownBackend) -> None:
        self.backend = backend
        self.held = backend._lock.held()

    def __enter__(self) -> None:
        self.held.__enter__()
        try:
            self.backend._sync.settle()
            self.backend._sync.take_changes()  # from here on, what changes is this write's
        except BaseException:
            self.held.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: Any) -> None:
        try:
            sync = self.backend._sync
            sync.flush(sync.take_changes())
        finally:
            self.held.__exit__(*exc)
