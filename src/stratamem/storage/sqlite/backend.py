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
from typing import TYPE_CHECKING, Any, ClassVar

from ... import paging
from ...audit import GENESIS, AuditDraft, first_bad_sequence, operator_draft, seal_many
from ...errors import ClearanceError, NotFound, StorageError, ValidationError
from ...levels import Level
from ...models import AuditEvent, Hit, Memory, PurgeResult, TaintEvent
from ...paging import ListQuery, Page
from ...private import create_private_file, match_sidecars
from ...progress import tracked
from ...scope import OWN, Conversations, readable
from ...text import ANALYZER_VERSION, Analyzer
from ..protocol import T
from ..records import MemoryDraft, SessionRecord, draft_memory, import_events, save_event
from ..sql import graph_read as graph_sql
from ..sql import graph_write, listing, transcripts
from ..sql.audit_group import GroupAppender
from ..sql.audit_pages import AuditQuery, audit_sql, descending
from ..sql.dialect import SQLITE as DIALECT
from ..sql.rows import MEMORY_COLUMNS, event_to_row, from_us, row_to_event, row_to_memory, to_us
from ..sql.transcripts import COPIED as TURN_TABLES
from ..sql.transcripts import (
    TranscriptMessage,
    UsageRecord,
)
from ..transaction import Appender, Body, Tx, no_append
from ..vectors import Pending, QueryVector
from . import (
    console,
    frequency_tail,
    postings_tail,
    rank,
    schema,
    sessions,
    vectors,
    versions,
    wal_erase,
)
from . import (
    graph as sqlite_graph,
)
from .deferred_index import PendingIndex
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
                self._reindex(conn)  # other languages, or terms made by an older analyzer
                conn.execute("UPDATE meta SET value = ? WHERE name = 'languages'", (langs,))
            conn.execute(
                "INSERT OR REPLACE INTO meta(name, value) VALUES ('analyzer', ?)", (ANALYZER_VERSION,)
            )

    def _reindex(self, conn: sqlite3.Connection) -> None:
        """Re-stem every live memory after the store's languages changed."""
        conn.execute("DELETE FROM postings")
        postings_tail.clear(conn)
        conn.execute("DELETE FROM part_stats")
        conn.execute("DELETE FROM term_stats")
        frequency_tail.clear(conn)
        rows = conn.execute(
            "SELECT id, agent_id, level, key, content, tags FROM memories WHERE deleted_us IS NULL"
        ).fetchall()
        pending = PendingIndex()
        for mem_id, agent, level, key, content, tags in tracked(rows, "reindexing"):
            terms, length = self.analyzer.document_terms(key, content, json.loads(tags))
            conn.execute("UPDATE memories SET length = ? WHERE id = ?", (length, mem_id))
            pending.add(mem_id, terms, agent, level, length)
            versions.stats_add(conn, agent, level, 1, length)
        pending.flush(conn)
        graph_write.reindex(graph_sql.GraphConn(conn, DIALECT), self.analyzer)

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

    def audit_events(self, query: AuditQuery) -> list[AuditEvent]:
        where, params = audit_sql(query, DIALECT)
        with self._errors(), self._tx(write=False) as conn:
            rows = conn.execute("SELECT a.* FROM audit a" + where, params).fetchall()
        events = [row_to_event(r) for r in rows]
        return events[::-1] if descending(query) else events

    def audit_tip(self) -> tuple[int, str]:
        with self._errors(), self._tx(write=False) as conn:
            row = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (0, GENESIS)

    def verify_audit(self, anchor: tuple[int, str] | None = None) -> int | None:
        with self._errors(), self._tx(write=False) as conn:
            head_row = conn.execute("SELECT value FROM meta WHERE name = 'audit_head'").fetchone()
            try:
                events = [row_to_event(r) for r in conn.execute("SELECT * FROM audit ORDER BY seq")]
            except (ValueError, KeyError, json.JSONDecodeError):
                # An event whose stored fields no longer parse has been edited.
                return self._first_unparsable(conn)
        head = None
        if head_row:
            seq, _, digest = head_row[0].partition(":")
            head = (int(seq), digest)
        return first_bad_sequence(events, head, anchor)

    def _first_unparsable(self, conn: sqlite3.Connection) -> int:
        for row in conn.execute("SELECT * FROM audit ORDER BY seq"):
            try:
                row_to_event(row)
            except (ValueError, KeyError, json.JSONDecodeError):
                return int(row[0])
        return 1

    # ------------------------------------------------------------------ sessions

    def _session(self, conn: sqlite3.Connection, session_id: str) -> SessionRecord:
        return sessions.read(conn, session_id)

    def session_record(self, session_id: str) -> SessionRecord:
        with self._errors(), self._tx(write=False) as conn:
            return self._session(conn, session_id)

    def open_session(
        self,
        agent_id: str,
        session_id: str | None,
        clearance: Level | None,
        peers: Sequence[str] | None,
        now: datetime,
        owner: str | None = None,
    ) -> SessionRecord:
        with self._errors(), self._tx(write=True) as conn:
            return sessions.open_session(
                conn, self._append, agent_id, session_id, clearance, peers, now, owner
            )

    def set_session_limits(
        self, session_id: str, clearance: Level | None, peers: Sequence[str] | None, now: datetime
    ) -> SessionRecord:
        with self._errors(), self._tx(write=True) as conn:
            return sessions.set_limits(conn, self._append, session_id, clearance, peers, now)

    def escalate(
        self, session_id: str, level: Level, reason: str, source: str | None, now: datetime
    ) -> SessionRecord:
        refused: ClearanceError | None = None
        with self._errors(), self._tx(write=True) as conn:
            record = self._session(conn, session_id)
            # Recorded at the level asked for (when higher): the reason and source describe material at
            # that level, so readers below it must not see them, whether or not the escalation succeeded.
            draft_base: dict[str, Any] = dict(
                session_id=record.id,
                agent_id=record.agent_id,
                taint=max(record.taint, level),
                levels=(level,),
            )
            if level > record.clearance:
                refused = ClearanceError(
                    f"cannot raise taint to {level.name}: the session's clearance is {record.clearance.name}"
                )
                self._append(
                    conn,
                    AuditDraft("escalate", **draft_base, outcome="refused", detail={"reason": reason[:200]}),
                    now,
                )
            elif level > record.taint:
                conn.execute("UPDATE sessions SET taint = ? WHERE id = ?", (int(level), session_id))
                conn.execute(
                    "INSERT INTO taint_events VALUES (?,?,?,?,?,?)",
                    (session_id, to_us(now), int(record.taint), int(level), reason, source),
                )
                self._append(
                    conn,
                    AuditDraft(
                        "escalate",
                        **draft_base,
                        detail={"reason": reason[:200], "source": source, "new": level.name},
                    ),
                    now,
                )
                record = self._session(conn, session_id)
            else:
                self._append(conn, AuditDraft("escalate", **draft_base, outcome="unchanged"), now)
        if refused:
            raise refused
        return record

    def taint_history(self, session_id: str) -> list[TaintEvent]:
        with self._errors(), self._tx(write=False) as conn:
            rows = conn.execute(
                "SELECT at_us, previous, new, reason, source FROM taint_events WHERE session_id = ? ORDER BY rowid",
                (session_id,),
            ).fetchall()
        return [TaintEvent(from_us(a), Level(p), Level(n), r, s) for a, p, n, r, s in rows]

    # ------------------------------------------------------------------ memories

    def save(self, session_id: str, draft: MemoryDraft, now: datetime) -> Memory:
        return self.save_many(session_id, [draft], now)[0]

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
        now_us = to_us(now)
        with self._errors(), self._tx(write=False) as conn:
            record = self._session(conn, session_id)
            found = None
            for agent in record.agents:
                row = conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories d WHERE agent_id = :agent AND key = :key "
                    "AND level <= :lvl AND deleted_us IS NULL AND (expires_us IS NULL OR expires_us > :now) "
                    f"AND {readable(conversations, 'd', ':csid')} ORDER BY level DESC LIMIT 1",
                    {"agent": agent, "key": key, "lvl": int(record.taint), "now": now_us, "csid": record.id},
                ).fetchone()
                if row:
                    found = row_to_memory(row)
                    break
        self._audit_read(record, "get", [found] if found else [], now, {"found": found is not None})
        return found

    def _audit_read(
        self, record: SessionRecord, op: str, memories: list[Memory], now: datetime, detail: dict[str, Any]
    ) -> None:
        self.append_audit(
            AuditDraft(
                op,
                record.id,
                record.agent_id,
                record.taint,
                tuple(m.key for m in memories),
                tuple(m.level for m in memories),
                tuple(m.lineage_id for m in memories),
                detail=detail,
            ),
            now,
        )

    def _audit_read_plain(
        self, record: SessionRecord, op: str, now: datetime, detail: dict[str, Any]
    ) -> None:
        self.append_audit(AuditDraft(op, record.id, record.agent_id, record.taint, detail=detail), now)

    # ------------------------------------------------------------------ shared bodies (storage/turn_store.py, the console)

    @property
    def transactions(self) -> SQLiteBackend:
        """Shared bodies (the turn's records, the console's reads) run through this backend's own seam."""
        return self

    def erase_deleted(self, tables: str) -> str:
        """Nothing of its own: ``Store.purge`` runs the memory purge next, whose WAL truncation erases these too."""
        return ""

    def _import_turn_rows(
        self, conn: sqlite3.Connection, records: Sequence[TranscriptMessage | UsageRecord], now: datetime
    ) -> int:
        count = transcripts.insert_rows(conn, DIALECT, records)
        self._append(conn, transcripts.import_draft(records, count), now)
        return count

    def list(
        self, session_id: str, query: ListQuery, now: datetime, conversations: Conversations = OWN
    ) -> Page:
        with self._errors(), self._tx(write=False) as conn:
            record = self._session(conn, session_id)
            scope = Scope(record, to_us(now), conversations)
            sql, extra = listing.listing_sql(DIALECT, query, scope.agents, scope.visible)
            rows = conn.execute(sql, {**scope.params, **extra}).fetchall()
        found = paging.paged([row_to_memory(r) for r in rows], query.limit)
        self._audit_read(
            record, "list", found, now, {"count": len(found), "tag_filter": query.tag is not None}
        )
        return found

    def search(
        self,
        session_id: str,
        terms: Sequence[str] | None,
        limit: int,
        now: datetime,
        mode: str = "lexical",
        query: QueryVector | None = None,
        conversations: Conversations = OWN,
    ) -> builtins.list[Hit]:
        with self._errors(), self._tx(write=False) as conn:
            record = self._session(conn, session_id)
            scope = Scope(record, to_us(now), conversations)
            if terms is None:
                hits = rank.recent(conn, scope, limit)
            elif mode != "lexical" and query is not None:
                hits = vectors.search(self, conn, scope, terms, limit, mode, query)
            else:
                hits = rank.ranked(conn, scope, terms, limit) if terms else []
        detail: dict[str, Any] = {"results": len(hits), "terms": len(terms or ())}
        if mode != "lexical":
            detail["mode"] = mode
        self._audit_read(record, "search", [h.memory for h in hits], now, detail)
        return hits

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
        with self._errors(), self._tx(write=False) as conn:
            scope = Scope(self._session(conn, session_id), to_us(now), conversations)
            return vectors.pending(conn, scope, limit)

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

    def delete(self, session_id: str, key: str, now: datetime) -> Memory:
        now_us = to_us(now)
        with self._errors(), self._tx(write=True) as conn:
            record = self._session(conn, session_id)
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS}, length FROM memories WHERE agent_id = ? AND key = ? AND level = ? "
                "AND deleted_us IS NULL AND (expires_us IS NULL OR expires_us > ?)",
                (record.agent_id, key, int(record.taint), now_us),
            ).fetchone()
            if row is None:
                self._append(
                    conn,
                    AuditDraft(
                        "delete",
                        record.id,
                        record.agent_id,
                        record.taint,
                        (key,),
                        (record.taint,),
                        outcome="not_found",
                    ),
                    now,
                )
            else:
                memory = row_to_memory(row[:12])
                versions.remove_live(
                    conn, self.analyzer, (row[0], row[1], row[2], row[3], row[4], row[5], row[12]), now_us
                )
                self._append(
                    conn,
                    AuditDraft(
                        "delete",
                        record.id,
                        record.agent_id,
                        record.taint,
                        (key,),
                        (memory.level,),
                        (memory.lineage_id,),
                    ),
                    now,
                )
        if row is None:
            raise NotFound(f"no memory with key {key!r} at level {record.taint.name}")
        return memory

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
            graph = graph_write.purge(graph_sql.GraphConn(conn, DIALECT), before_us, agent_id)
            vectors.forget(conn, ids)
            frequency_tail.fold(conn)  # no term of a purged memory stays in the tail
            self._append(
                conn,
                operator_draft(
                    "purge",
                    agent_id=agent_id,
                    detail={"purged": len(ids) + graph, "before": before.isoformat()},
                ),
                now,
            )
        count = len(ids) + graph
        # Outside the store's lock and on a connection of its own: a reader elsewhere delays only this.
        if self.path == ":memory:":
            return PurgeResult(count)
        with self._errors():
            erased = wal_erase.truncate_wal(self.path)
        return PurgeResult(count, erased, "" if erased else wal_erase.REMAINING)

    def export(self, agent_id: str | None, now: datetime) -> Iterator[Memory]:
        sql = (
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE deleted_us IS NULL "
            "AND (expires_us IS NULL OR expires_us > ?)"
        )
        params: list[object] = [to_us(now)]
        if agent_id is not None:
            sql += " AND agent_id = ?"
            params.append(agent_id)
        with self._errors(), self._tx(write=False) as conn:
            rows = conn.execute(sql + " ORDER BY agent_id, key, level", params).fetchall()
        self.append_audit(operator_draft("export", agent_id=agent_id, detail={"count": len(rows)}), now)
        return iter([row_to_memory(r) for r in rows])

    def import_memories(
        self, memories: Iterable[Memory], now: datetime, turns: Sequence[TranscriptMessage | UsageRecord] = ()
    ) -> int:
        """All of it in one transaction (the batch path of save_many), one audit event per record.

        The turn records of the same export go in the same transaction: all or nothing with the memories.
        """
        prepared = list(memories)
        analysed = self.analyzer.document_terms_many((m.key, m.content, m.tags) for m in prepared)
        with self._errors(), self._tx(write=True) as conn:
            if turns:
                self._import_turn_rows(conn, turns, now)
            versions.write_batch(conn, self.analyzer, prepared, analysed, False, now)
            self._append_many(conn, import_events(prepared), now)
        return len(prepared)

    def restore_deleted(self, ref: int, clearance: Level, actor: str, now: datetime) -> Memory:
        return console.restore(self, ref, clearance, actor, now)

    # ------------------------------------------------------------------ whole-store copy

    COPIED_TABLES: ClassVar[dict[str, str]] = {
        "sessions": "id, agent_id, clearance, peers, taint, created_us, owner",
        "taint_events": "session_id, at_us, previous, new, reason, source",
        "memories": "id, agent_id, key, level, content, tags, category, session_id, created_us, updated_us, "
        "lineage_id, expires_us, deleted_us",
        "audit": "seq, at_us, session_id, agent_id, taint, operation, keys, levels, lineage, outcome, detail, "
        "prev_hash, hash",
        **TURN_TABLES,
        **graph_sql.COPIED_TABLES,
    }

    def dump(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every row that is the store's truth (not derived indexes), table by table, for migration."""
        with self._errors(), self._tx(write=False) as conn:
            for table, columns in self.COPIED_TABLES.items():
                names = [c.strip() for c in columns.split(",")]
                order = "rowid" if table != "audit" else "seq"
                for row in conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}"):
                    yield table, dict(zip(names, row, strict=True))
            head = conn.execute("SELECT value FROM meta WHERE name = 'audit_head'").fetchone()
            if head:
                yield "meta", {"name": "audit_head", "value": head[0]}

    def restore(self, rows: Iterable[tuple[str, dict[str, Any]]]) -> int:
        """Load ``dump`` output into this (empty) store and rebuild the derived indexes."""
        count = 0
        with self._errors(), self._tx(write=True) as conn:
            if conn.execute(
                "SELECT EXISTS (SELECT 1 FROM memories UNION ALL SELECT 1 FROM audit "
                "UNION ALL SELECT 1 FROM turn_messages)"
            ).fetchone()[0]:
                raise ValidationError("the target store is not empty")
            for table, row in rows:
                if table == "meta":
                    conn.execute(
                        "INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)", (row["name"], row["value"])
                    )
                    continue
                if table not in self.COPIED_TABLES:
                    raise ValidationError(f"unknown table {table!r} in the copy stream")
                placeholders = ", ".join("?" * len(row))
                conn.execute(
                    f"INSERT INTO {table} ({', '.join(row)}) VALUES ({placeholders})", list(row.values())
                )
                count += 1
            conn.execute("UPDATE memories SET length = 0 WHERE length IS NULL")
            self._reindex(conn)
            vectors.backfill(conn)
            for agent, key in conn.execute("SELECT DISTINCT agent_id, key FROM memories").fetchall():
                versions.refresh_shadowable(conn, agent, key)
        return count

    # ------------------------------------------------------------------ knowledge graph (storage/sql/graph_read.py)

    @property
    def graph(self) -> sqlite_graph.Graph:
        """The graph's bodies run through this backend's own seam."""
        return sqlite_graph.Graph(self)
