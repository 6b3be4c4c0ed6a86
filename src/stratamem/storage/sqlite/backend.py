"""The embedded backend: one SQLite file in WAL mode.

Layout (see ARCHITECTURE.md): ``memories`` holds every version of every key,
live and soft-deleted; ``postings`` is our own inverted index of stemmed terms
for live versions; ``part_stats`` keeps document count and total length per
(agent, level) so a session's BM25 statistics are summed over exactly the
partitions it may see. Versions that are shadowed or expired are subtracted at
query time through two small partial indexes. Nothing in a ranking therefore
depends on a record the session cannot see.
"""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ... import paging
from ...audit import GENESIS, AuditDraft, seal_many
from ...errors import StorageError
from ...labels import visible_params, visible_sql
from ...levels import Level
from ...models import AuditEvent, Hit, Memory, PurgeResult
from ...paging import ListQuery, Page
from ...private import create_private_file, match_sidecars
from ...scope import OWN, Conversations, readable
from ...text import ANALYZER_VERSION, Analyzer
from .. import turn_store
from ..protocol import T
from ..records import (
    MemoryDraft,
    SearchRequest,
    SessionRecord,
    SessionRequest,
    draft_memory,
    import_events,
    purge_event,
    save_event,
)
from ..sql import declassification, deletion, graph_write, listing, sessions
from ..sql.audit_group import GroupAppender
from ..sql.dialect import SQLITE as DIALECT
from ..sql.graph_read import GraphConn
from ..sql.rows import MEMORY_COLUMNS, event_to_row, row_to_memory, to_us
from ..sql.transcripts import TranscriptMessage, UsageRecord
from ..transaction import Appender, Body, Tx, no_append, observed_read
from ..vectors import Pending
from . import copy, frequency_tail, rank, schema, vectors, versions, wal_erase
from . import graph as sqlite_graph
from .rank import Scope
from .readers import ReadConnections

if TYPE_CHECKING:
    from .vector_cache import VectorCache


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back unless SQLite already did (it does on a full disk or database), so the real error surfaces."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


class SQLiteBackend:
    """Implements ``storage.base.Backend`` on one SQLite database."""

    def __init__(
        self,
        path: str,
        analyzer: Analyzer,
        *,
        synchronous: str = "NORMAL",
        busy_timeout_s: float = 60.0,
    ) -> None:
        self.path = path
        self.analyzer = analyzer
        self._lock = threading.RLock()
        self._vector_cache: VectorCache | None = None  # made on the first dense search
        self._vector_lock = threading.Lock()  # the cache is shared by the threads' read connections
        self._readers: ReadConnections | None = None
        self._audit_group = GroupAppender(self._append_group)
        self._versions = versions.Versions(analyzer)
        try:
            if path != ":memory:" and not os.path.exists(path):
                create_private_file(path)  # 0600 before SQLite opens it; its -wal/-shm/-journal inherit that
        except OSError as exc:
            raise StorageError(f"cannot create the SQLite store at {path}: {exc}") from exc
        try:
            # a prepared statement per distinct SQL text is kept: the postings tail's multi-row inserts
            # have one text per row count (``postings_tail.CHUNK``), on top of the backend's own
            self._conn = sqlite3.connect(
                path,
                isolation_level=None,
                timeout=busy_timeout_s,
                check_same_thread=False,
                cached_statements=512,
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            if path != ":memory:":
                self._retry(lambda: self._conn.execute("PRAGMA journal_mode = WAL"))
                match_sidecars(path)
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            self._conn.execute("PRAGMA secure_delete = ON")
            self._conn.execute("PRAGMA temp_store = MEMORY")
            self._conn.execute("PRAGMA cache_size = -65536")
            self._migrate()
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open SQLite store at {path}: {exc}") from exc
        # WAL readers on their own connections (none for :memory:, which is private to one connection)
        self._readers = None if path == ":memory:" else ReadConnections(path, busy_timeout_s)

    # ------------------------------------------------------------------ plumbing

    @staticmethod
    def _retry(action: Callable[[], T], attempts: int = 50) -> T:
        """Pragmas that need a lock do not honour busy_timeout; retry them briefly."""
        for attempt in range(attempts):
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or attempt == attempts - 1:
                    raise
                time.sleep(0.02 * (attempt + 1))
        raise ValueError(f"attempts must be positive, got {attempts}")

    @contextmanager
    def _tx(self, write: bool) -> Iterator[sqlite3.Connection]:
        if write or self._readers is None or self._in_write():
            with self._lock:
                yield from self._run(self._conn, write)
        else:
            yield from self._run(self._readers.get(), write)

    def _in_write(self) -> bool:
        """This thread already holds the write connection (a read nested in a write sees that write)."""
        owned: bool = self._lock._is_owned()  # type: ignore[attr-defined]  # RLock's private test
        return owned

    @staticmethod
    def _run(conn: sqlite3.Connection, write: bool) -> Iterator[sqlite3.Connection]:
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as exc:
            raise StorageError(f"storage is unavailable: {exc}") from exc
        try:
            yield conn
        except BaseException:
            _rollback(conn)
            raise
        else:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(conn)
                raise StorageError(f"could not commit: {exc}") from exc

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StorageError(f"storage error: {exc}") from exc

    # ------------------------------------------------------------------ the transaction seam

    def read(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        """``body`` in one read transaction (a WAL snapshot), the session row read inside it."""
        with self._errors(), self._tx(write=False) as conn:
            return body(Tx(conn, DIALECT, self._session(conn, session_id), now))

    def write(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        """``body`` in one ``BEGIN IMMEDIATE`` transaction, the session row read inside it: the live taint."""
        with self._errors(), self._tx(write=True) as conn:
            return body(Tx(conn, DIALECT, self._session(conn, session_id), now, self._appender(conn, now)))

    def operator(self, now: datetime, body: Body[sqlite3.Connection, T], *, read_only: bool = False) -> T:
        """``body`` in one transaction bound to no session (it sees every row); ``read_only``: a snapshot."""
        with self._errors(), self._tx(write=not read_only) as conn:
            return body(Tx(conn, DIALECT, None, now, no_append if read_only else self._appender(conn, now)))

    def _appender(self, conn: sqlite3.Connection, now: datetime) -> Appender:
        return lambda drafts: self._append_many(conn, drafts, now)

    def _migrate(self) -> None:
        """The schema brought to its latest version (``schema``), then the index re-stemmed if the store's
        languages or the analyzer changed since it was built."""
        schema.upgrade(self._conn)
        with self._tx(write=True) as conn:
            langs = json.dumps(list(self.analyzer.languages))
            row = conn.execute("SELECT value FROM meta WHERE name = 'languages'").fetchone()
            analyzer = conn.execute("SELECT value FROM meta WHERE name = 'analyzer'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta(name, value) VALUES ('languages', ?)", (langs,))
            elif row[0] != langs or analyzer is None or analyzer[0] != ANALYZER_VERSION:
                versions.reindex(conn, self.analyzer)  # other languages, or terms made by an older analyzer
                conn.execute("UPDATE meta SET value = ? WHERE name = 'languages'", (langs,))
            conn.execute(
                "INSERT OR REPLACE INTO meta(name, value) VALUES ('analyzer', ?)", (ANALYZER_VERSION,)
            )

    def close(self) -> None:
        if self._readers is not None:
            self._readers.close()
        with self._lock:
            self._conn.close()

    # ------------------------------------------------------------------ audit

    def _append(self, conn: sqlite3.Connection, draft: AuditDraft, now: datetime) -> AuditEvent:
        return self._append_many(conn, [draft], now)[0]

    def _append_many(
        self, conn: sqlite3.Connection, drafts: Sequence[AuditDraft], now: datetime
    ) -> list[AuditEvent]:
        """Chain the events after the tip in order: one read of the tip, one head update for the lot."""
        row = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (row[0], row[1]) if row else (0, GENESIS)
        events = seal_many(seq + 1, now, drafts, prev)
        conn.executemany("INSERT INTO audit VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", map(event_to_row, events))
        if events:
            conn.execute(
                "INSERT INTO meta(name, value) VALUES ('audit_head', ?) "
                "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                (f"{events[-1].seq}:{events[-1].hash}",),
            )
        return events

    def append_audit(self, draft: AuditDraft, now: datetime) -> AuditEvent:
        """Committed before it returns; concurrent appends share a transaction (``audit_group``)."""
        if self._in_write():  # inside this thread's own write: a group's leader would wait for it forever
            return self._append_group([(draft, now)])[0]
        return self._audit_group.append(draft, now)

    def _append_group(self, items: Sequence[tuple[AuditDraft, datetime]]) -> list[AuditEvent]:
        with self._errors(), self._tx(write=True) as conn:
            return [self._append(conn, draft, now) for draft, now in items]

    # ------------------------------------------------------------------ sessions

    def _session(self, conn: sqlite3.Connection, session_id: str) -> SessionRecord:
        return sessions.read(conn, DIALECT, session_id)

    def session_record(self, session_id: str) -> SessionRecord:
        with self._errors(), self._tx(write=False) as conn:
            return self._session(conn, session_id)

    def open_session(self, request: SessionRequest, now: datetime) -> SessionRecord:
        with self._errors(), self._tx(write=True) as conn:
            record, draft = sessions.open_body(conn, DIALECT, self._session, request, now)
            self._append(conn, draft, now)
            return record

    def escalate(
        self, session_id: str, level: int, reason: str, source: str | None, now: datetime
    ) -> SessionRecord:
        with self._errors(), self._tx(write=True) as conn:
            before = self._session(conn, session_id)
            record, draft, refused = sessions.escalate_body(
                conn, DIALECT, before, (level, reason, source), now, lambda at: None
            )
            self._append(conn, draft, now)
        if refused:
            raise refused
        return record

    # ------------------------------------------------------------------ memories

    def save_many(self, session_id: str, drafts: Sequence[MemoryDraft], now: datetime) -> list[Memory]:
        """Every draft at the live taint read inside the one write transaction; one audit event per record."""
        analysed = self.analyzer.document_terms_many((d.key, d.content, d.tags) for d in drafts)
        with self._errors(), self._tx(write=True) as conn:
            record = self._session(conn, session_id)
            stored = versions.write_batch(
                conn, self.analyzer, [draft_memory(record, d, now) for d in drafts], analysed, True, now
            )
            self._append_many(conn, [save_event(record, m) for m in stored], now)
            return stored

    def get(
        self, session_id: str, key: str, now: datetime, conversations: Conversations = OWN
    ) -> Memory | None:
        def reader(tx: Tx[sqlite3.Connection]) -> Memory | None:
            record = tx.record
            for agent in record.agents:
                row = tx.conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories d WHERE agent_id = :agent AND key = :key "
                    f"AND {visible_sql('level')} AND deleted_us IS NULL "
                    "AND (expires_us IS NULL OR expires_us > :now) "
                    f"AND {readable(conversations, 'd', ':csid')} ORDER BY level DESC LIMIT 1",
                    {
                        "agent": agent,
                        "key": key,
                        **visible_params(record.taint_code),
                        "now": to_us(now),
                        "csid": record.id,
                    },
                ).fetchone()
                if row:
                    return row_to_memory(row)
            return None

        return observed_read(
            self,
            session_id,
            now,
            "get",
            reader,
            lambda m: [m] if m else [],
            lambda m: {"found": m is not None},
        )

    def list(
        self, session_id: str, query: ListQuery, now: datetime, conversations: Conversations = OWN
    ) -> Page:
        def reader(tx: Tx[sqlite3.Connection]) -> Page:
            scope = Scope(tx.record, to_us(now), conversations)
            sql, extra = listing.listing_sql(DIALECT, query, scope.agents, scope.visible)
            rows = tx.conn.execute(sql, {**scope.params, **extra}).fetchall()
            return paging.paged([row_to_memory(r) for r in rows], query.limit)

        return observed_read(
            self,
            session_id,
            now,
            "list",
            reader,
            lambda page: page,
            lambda page: {"count": len(page), "tag_filter": query.tag is not None},
        )

    def search(self, session_id: str, request: SearchRequest, now: datetime) -> builtins.list[Hit]:
        def reader(tx: Tx[sqlite3.Connection]) -> builtins.list[Hit]:
            scope, terms = Scope(tx.record, to_us(now), request.conversations), request.terms
            if terms is None:
                return rank.recent(tx.conn, scope, request.limit)
            if request.mode != "lexical" and request.query is not None:
                return vectors.search(
                    self, tx.conn, scope, terms, request.limit, request.mode, request.query, request.weights
                )
            return rank.ranked(tx.conn, scope, terms, request.limit, request.weights) if terms else []

        return observed_read(
            self, session_id, now, "search", reader, lambda hits: [h.memory for h in hits], request.detail
        )

    def delete(self, session_id: str, key: str, now: datetime) -> Memory:
        return deletion.delete(self, self._versions, session_id, key, now)

    # ------------------------------------------------------------------ shared bodies (storage/turn_store.py, audit_store.py, the console)

    @property
    def transactions(self) -> SQLiteBackend:
        """Shared bodies (the turn's records, the audit log's reads, the console's reads) run through this
        backend's own seam."""
        return self

    def erase_deleted(self, tables: str) -> str:
        """Nothing of its own: ``Store.purge`` runs the memory purge next, whose WAL truncation erases these too."""
        return ""

    # ------------------------------------------------------------------ vectors (sqlite/vectors.py)

    @property
    def vectors(self) -> SQLiteBackend:
        """Search by meaning's vectors: this backend's own methods below (``protocol.VectorIndex``)."""
        return self

    def vector_cache(self) -> VectorCache:
        """This process's matrix of vectors (made on the first dense search; guarded by ``_vector_lock``)."""
        with self._vector_lock:
            if self._vector_cache is None:
                from .vector_cache import VectorCache

                self._vector_cache = VectorCache()
            return self._vector_cache

    def pending_vectors(
        self, session_id: str, limit: int, now: datetime, conversations: Conversations = OWN
    ) -> builtins.list[Pending]:
        return self.read(
            session_id,
            now,
            lambda tx: vectors.pending(tx.conn, Scope(tx.record, to_us(now), conversations), limit),
        )

    def all_pending_vectors(self, limit: int) -> tuple[builtins.list[Pending], int]:
        with self._errors(), self._tx(write=False) as conn:
            return vectors.all_pending(conn, limit), vectors.count_pending(conn)

    def store_vectors(self, model: str, items: Sequence[Any]) -> int:
        with self._errors(), self._tx(write=True) as conn:
            return vectors.store_vectors(conn, model, items)

    def use_embedder(self, identity: str, reset: bool = False) -> None:
        with self._errors(), self._tx(write=True) as conn:
            if reset:
                conn.execute("DELETE FROM meta WHERE name = 'embedder'")
                conn.execute(
                    "UPDATE vectors SET model = NULL, scale = NULL, vec = NULL WHERE model IS NOT NULL"
                )
                vectors.bump_epoch(conn)
            vectors.use_model(conn, identity)

    # ------------------------------------------------------------------ operator actions

    def purge(self, before: datetime, agent_id: str | None, now: datetime) -> PurgeResult:
        before_us, now_us = to_us(before), to_us(now)
        agent_sql, agent_params = ("AND agent_id = ?", [agent_id]) if agent_id is not None else ("", [])
        with self._errors(), self._tx(write=True) as conn:
            expired = conn.execute(
                "SELECT id, agent_id, key, level, content, tags, length FROM memories "
                "WHERE deleted_us IS NULL AND expires_us IS NOT NULL AND expires_us <= ? AND expires_us < ? "
                + agent_sql,
                [now_us, before_us, *agent_params],
            ).fetchall()
            for row in expired:
                versions.remove_live(conn, self.analyzer, row, deleted_us=None)
            deleted = conn.execute(
                "SELECT id FROM memories WHERE deleted_us IS NOT NULL AND deleted_us < ? " + agent_sql,
                [before_us, *agent_params],
            ).fetchall()
            ids = [r[0] for r in expired] + [r[0] for r in deleted]
            conn.executemany("DELETE FROM memories WHERE id = ?", [(i,) for i in ids])
            graph = graph_write.purge(GraphConn(conn, DIALECT), before_us, agent_id)
            vectors.forget(conn, ids)
            frequency_tail.fold(conn)  # no term of a purged memory stays in the tail
            self._append(conn, purge_event(agent_id, len(ids) + graph, before), now)
        count = len(ids) + graph
        # Outside the store's lock and on a connection of its own: a reader elsewhere delays only this.
        if self.path == ":memory:":
            return PurgeResult(count)
        with self._errors():
            erased = wal_erase.truncate_wal(self.path)
        return PurgeResult(count, erased, "" if erased else wal_erase.REMAINING)

    def export(self, agent_id: str | None, now: datetime) -> Iterator[Memory]:
        return listing.exported(self, agent_id, now)

    def import_memories(
        self, memories: Iterable[Memory], now: datetime, turns: Sequence[TranscriptMessage | UsageRecord] = ()
    ) -> int:
        """All of it in one transaction (the batch path of save_many), one audit event per record.

        The turn records of the same export go in the same transaction: all or nothing with the memories.
        """
        prepared = list(memories)
        analysed = self.analyzer.document_terms_many((m.key, m.content, m.tags) for m in prepared)

        def body(tx: Tx[sqlite3.Connection]) -> None:
            if turns:
                turn_store.import_body(tx, turns)
            versions.write_batch(tx.conn, self.analyzer, prepared, analysed, False, now)
            tx.append_many(import_events(prepared))

        self.operator(now, body)
        return len(prepared)

    def restore_deleted(self, ref: int, clearance: Level, actor: str, now: datetime) -> Memory:
        return self.operator(now, lambda tx: deletion.restore_body(tx, self._versions, ref, clearance, actor))

    def declassify(self, order: declassification.Order, now: datetime) -> tuple[Memory, int]:
        return self.operator(now, lambda tx: declassification.declassify_body(tx, self._versions, order))

    # ------------------------------------------------------------------ whole-store copy (``copy``)

    def dump(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every row that is the store's truth (not derived indexes), table by table, for migration."""
        with self._errors(), self._tx(write=False) as conn:
            yield from copy.dump(conn)

    def restore(self, rows: Iterable[tuple[str, dict[str, Any]]]) -> int:
        """Load ``dump`` output into this (empty) store and rebuild the derived indexes."""
        with self._errors(), self._tx(write=True) as conn:
            return copy.restore(conn, self.analyzer, rows)

    # ------------------------------------------------------------------ knowledge graph (storage/sql/graph_read.py)

    @property
    def graph(self) -> sqlite_graph.Graph:
        """The graph's bodies run through this backend's own seam."""
        return sqlite_graph.Graph(self)
