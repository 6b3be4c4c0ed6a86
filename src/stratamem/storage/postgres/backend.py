"""The PostgreSQL backend, for deployments beyond one machine (``pip install 'stratamem[postgres]'``).

Selected by a ``postgresql://`` store URL (parameters: ``pg_connect``). It
mirrors the SQLite backend table for table and query for query — every
version of every key in ``memories``, our own postings with tf, agent, level and
length, ``part_stats`` per (agent, level), ``term_stats`` per (term, agent,
level), ``shadowable`` flags, the
hash-chained ``audit`` — so the two backends give the same answers, scores and
audit chains, and ``dump``/``restore`` copy a store between them.

Terms. PostgreSQL ships Snowball stemmers of its own (the ``english``,
``spanish``, ... text-search configurations are the same Snowball algorithms
PyStemmer runs), but its tokenizer, stopwords and configuration differ by
server version and settings. So we stem in Python with the store's
``Analyzer`` and index the resulting terms: both backends hold exactly the same
terms for the same text, and a store moves between them without re-ranking.

Consistency and concurrency. A write runs in one READ COMMITTED transaction
that reads the session row FOR SHARE (a concurrent escalation waits for it or
is seen by it), takes an advisory lock on its (agent, key) — under a shared
store-wide lock that bulk operator actions take exclusively — and appends its
audit event last, after locking the one-row audit head, so the hash chain is
strictly linear however many processes append. A save or a batch does all of
that in one statement, the server-side ``sm_save`` (``pg_save``). Reads run in
one REPEATABLE READ snapshot, then append their audit event in a short
transaction shared with the other appends queued at that moment
(``audit_group``). Deadlocks and serialization failures are retried whole.

Defence in depth: every transaction is bound to its session and row-level
security enforces the lattice in the database as well (``pg_schema``).
"""

from __future__ import annotations

import builtins
import json
import re
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from hashlib import blake2b
from typing import TYPE_CHECKING, Any, ClassVar

import psycopg

from ...audit import GENESIS, AuditDraft, first_bad_sequence, operator_draft, seal
from ...errors import ClearanceError, NotFound, StorageError, StratamemError, ValidationError
from ...levels import Level
from ...models import AuditEvent, Hit, Memory, PurgeResult, TaintEvent
from ...paging import ListQuery, Page
from ...scope import OWN, Conversations
from ...text import ANALYZER_VERSION, Analyzer
from ..protocol import T
from ..records import MemoryDraft, SessionRecord, import_events
from ..sql import graph_read as graph_sql
from ..sql import graph_write, transcripts
from ..sql.audit_group import GroupAppender
from ..sql.audit_pages import AuditQuery, audit_sql, descending
from ..sql.dialect import POSTGRES
from ..sql.rows import event_to_row, from_us, one_row, to_us
from ..sql.transcripts import COPIED as TURN_TABLES
from ..sql.transcripts import (
    TranscriptMessage,
    UsageRecord,
)
from ..transaction import Appender, Body, Tx, no_append
from ..vectors import Pending, QueryVector
from . import (
    console,
    index,
    schema,
    sessions,
    vectors,
)
from . import (
    graph as pg_graph,
)
from . import (
    save as pg_save,
)
from . import (
    search as pg_search,
)
from .connect import (
    bind,
    bind_operator,
    configure,
    open_pool,
    parse_url,
    run,
    run_autocommit,
    run_on,
)
from .rows import MEMORY_COLUMNS, dec, enc, row_to_event, row_to_memory
from .schema import migrate_schema

if TYPE_CHECKING:
    pass

AUDIT_COLUMNS = (
    "seq, at_us, session_id, agent_id, taint, operation, keys, levels, lineage, outcome, detail, "
    "prev_hash, hash"
)
SESSION_COLUMNS = sessions.COLUMNS
# The class defines a method named ``list``; annotations inside it use these.
MemoryList = list[Memory]
HitList = list[Hit]
Rows = list[tuple[Any, ...]]
# VACUUM VERBOSE's detail line starts with the count of dead row versions it had to keep.
_LEADING_NUMBER = re.compile(r"\s*(\d+)\D")
_VACUUM_ATTEMPTS = 7  # about 6 s of waiting at most
_VACUUM_LOCK_TIMEOUT = "250ms"  # per attempt: how long everyone else may queue behind VACUUM FULL


class PostgresBackend:
    """Implements ``storage.base.Backend`` on one schema of a PostgreSQL database."""

    # The rows that are the store's truth, in the SQLite backend's dump format.
    COPIED_TABLES: ClassVar[dict[str, tuple[str, str]]] = {
        "sessions": ("id, agent_id, clearance, peers, taint, created_us, owner", "ord"),
        "taint_events": ("session_id, at_us, previous, new, reason, source", "ord"),
        "memories": (
            (
                "id, agent_id, key, level, content, tags, category, session_id, created_us, updated_us, "
                "lineage_id, expires_us, deleted_us"
            ),
            "id",
        ),
        "audit": (AUDIT_COLUMNS, "seq"),
        **{table: (columns, "id") for table, columns in TURN_TABLES.items()},
        **{table: (columns, "id") for table, columns in graph_sql.COPIED_TABLES.items()},
    }
    # Columns a dump from an older version may lack (restored as NULL).
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"owner"})
    # Columns that may hold NUL and are stored escaped (pg_rows.enc).
    _ESCAPED: ClassVar[dict[str, set[str]]] = {
        "sessions": {"id"},
        "taint_events": {"session_id", "reason", "source"},
        "memories": {"content", "session_id"},
        "audit": {"session_id"},
        "turn_messages": {"session_id", "content", "tool_calls", "tool_call_id", "origin"},
        "turn_usage": {"session_id", "model"},
        **{table: set() for table in graph_sql.COPIED_TABLES},
    }

    def __init__(self, url: str, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self.config = parse_url(url)
        digest = blake2b(f"stratamem.store:{self.config.schema}".encode(), digest_size=8).digest()
        self._store_lock = int.from_bytes(digest, "big", signed=True)
        self._key_space = zlib.crc32(self.config.schema.encode()) - 2**31
        try:
            # One direct connection brings the schema up to date, proves the role
            # setup is safe and checks the languages; the pool then fills in the
            # background while the caller gets on with its work.
            with psycopg.connect(self.config.conninfo, autocommit=True) as conn:
                migrate_schema(conn, self.config.schema, self.config.app_role)
                self._save_one = schema.has_migration("sm_save_one")
                configure(conn, self.config)  # refuse a role that would bypass the policies, now and clearly
                self._vtype = vectors.vector_type(conn)
                run_on(conn, self._check_languages)
            self._pool = open_pool(self.config)
            self._audit_group = GroupAppender(self._append_group)
        except psycopg.Error as exc:
            raise StorageError(
                f"cannot open the PostgreSQL store (schema {self.config.schema!r}): {exc}"
            ) from exc

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except StratamemError:
            raise
        except psycopg.Error as exc:
            raise StorageError(f"storage error: {exc}") from exc

    def _write(self, body: Callable[[psycopg.Connection], T]) -> T:
        with self._errors():
            return run(self._pool, body)

    def _read(self, body: Callable[[psycopg.Connection], T]) -> T:
        with self._errors():
            return run(self._pool, body, read_only=True)

    def _query(self, sql: str, params: Sequence[Any]) -> Rows:
        """One statement outside an explicit transaction (it is its own snapshot): saves two round trips."""
        with self._errors(), self._pool.connection() as conn:
            return conn.execute(sql, params).fetchall()

    def _operator(self, body: Callable[[psycopg.Connection], T], read_only: bool = False) -> T:
        def bound(conn: psycopg.Connection) -> T:
            bind_operator(conn)
            return body(conn)

        return self._read(bound) if read_only else self._write(bound)

    # ------------------------------------------------------------------ the transaction seam

    def read(self, session_id: str, now: datetime, body: Body[psycopg.Connection, T]) -> T:
        """``body`` in one read-only transaction bound to the session (its row read inside it)."""

        def bound(conn: psycopg.Connection) -> T:
            return body(Tx(conn, POSTGRES, self._bound_session(conn, session_id), now))

        return self._read(bound)

    def write(
        self, session_id: str, now: datetime, body: Body[psycopg.Connection, T], *, lock_session: bool = True
    ) -> T:
        """``body`` in one read-write transaction bound to the session, its events chained in it.

        The session row is read ``FOR SHARE`` (an escalation waits for the commit, so the write is
        at the live taint); a read that records its event in its own transaction passes
        ``lock_session=False`` and holds no lock on it.
        """

        def bound(conn: psycopg.Connection) -> T:
            record = self._bound_session(conn, session_id, "FOR SHARE" if lock_session else "")
            return body(Tx(conn, POSTGRES, record, now, self._appender(conn, now)))

        return self._write(bound)

    def operator(self, now: datetime, body: Body[psycopg.Connection, T], *, read_only: bool = False) -> T:
        """``body`` in one operator transaction (bound to no session: it sees every row); ``read_only``: a
        read-only one, which appends nothing."""

        def bound(conn: psycopg.Connection) -> T:
            return body(Tx(conn, POSTGRES, None, now, no_append if read_only else self._appender(conn, now)))

        return self._operator(bound, read_only)

    def _appender(self, conn: psycopg.Connection, now: datetime) -> Appender:
        return lambda drafts: self._append_many(conn, drafts, now)

    def lock_keys(self, conn: psycopg.Connection, pairs: Iterable[tuple[str, str]]) -> None:
        """Serialise writers of the same (agent, key); bulk operator actions exclude them all.

        The key locks are taken in one sorted order (no deadlock between two
        batches), in one statement however many keys a batch has.
        """
        ordered = [f"{agent}\x1f{key}" for agent, key in sorted(set(pairs))]
        conn.execute(
            "SELECT pg_advisory_xact_lock_shared(%s), (SELECT count(pg_advisory_xact_lock(%s, hashtext(k))) "
            "FROM (SELECT k FROM unnest(%s::text[]) WITH ORDINALITY AS u(k, n) ORDER BY n) AS o)",
            (self._store_lock, self._key_space, ordered),
        )

    def lock_store(self, conn: psycopg.Connection) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._store_lock,))

    def _check_languages(self, conn: psycopg.Connection) -> None:
        """Re-stem every live memory when the store's languages changed (as the SQLite backend does)."""
        langs = json.dumps(list(self.analyzer.languages))
        bind_operator(conn)
        state = "SELECT (SELECT value FROM meta WHERE name = 'languages'), (SELECT value FROM meta WHERE name = 'analyzer')"
        row, analyzer = one_row(conn.execute(state).fetchone())
        if row == langs and analyzer == ANALYZER_VERSION:
            return
        self.lock_store(conn)
        conn.execute("SELECT value FROM meta WHERE name = 'languages' FOR UPDATE")
        row, analyzer = one_row(conn.execute(state).fetchone())
        if row is None:
            conn.execute(
                "INSERT INTO meta (name, value) VALUES ('languages', %s) ON CONFLICT DO NOTHING", (langs,)
            )
        elif row != langs or analyzer != ANALYZER_VERSION:
            index.reindex(conn, self.analyzer)  # other languages, or terms made by an older analyzer
            graph_write.reindex(graph_sql.GraphConn(conn, POSTGRES), self.analyzer)
            conn.execute("UPDATE meta SET value = %s WHERE name = 'languages'", (langs,))
        conn.execute(
            "INSERT INTO meta (name, value) VALUES ('analyzer', %s) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (ANALYZER_VERSION,),
        )

    def close(self) -> None:
        self._pool.close()

    # ------------------------------------------------------------------ audit

    def _append(self, conn: psycopg.Connection, draft: AuditDraft, now: datetime) -> AuditEvent:
        return self._append_many(conn, [draft], now)[0]

    def _append_many(
        self, conn: psycopg.Connection, drafts: Sequence[AuditDraft], now: datetime
    ) -> list[AuditEvent]:
        """Append events in order; locking the head row makes concurrent appends queue, so the chain stays linear.

        One event is one statement (insert and head update together); a batch
        sends its inserts in one pipeline and moves the head once.
        """
        head = conn.execute("SELECT seq, hash FROM audit_head FOR UPDATE").fetchone()
        if head is None:  # created with the schema and never deleted by stratamem: someone removed it
            raise StorageError(
                "the audit log's head record is missing (tampering?): run 'stratamem audit verify "
                "--anchor FILE', then restore the row (seq, hash of the newest event)"
            )
        seq, prev = head
        events = []
        for draft in drafts:
            seq += 1
            events.append(seal(seq, now, draft, prev))
            prev = events[-1].hash
        rows = [tuple(enc(v) if i == 2 else v for i, v in enumerate(event_to_row(e))) for e in events]
        insert = f"INSERT INTO audit ({AUDIT_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
        if len(rows) == 1:
            conn.execute(
                f"WITH appended AS ({insert}) UPDATE audit_head SET seq = %s, hash = %s",
                (*rows[0], seq, prev),
            )
        else:
            with conn.cursor() as cur:
                cur.executemany(insert, rows)
            conn.execute("UPDATE audit_head SET seq = %s, hash = %s", (seq, prev))
        return events

    def append_audit(self, draft: AuditDraft, now: datetime) -> AuditEvent:
        """Runtime and operator records (policy decisions, reads, ...): not reachable from a session's tools.

        Committed before it returns; concurrent appends share one transaction and one WAL flush
        (``audit_group``).
        """
        return self._audit_group.append(draft, now)

    def _append_group(self, items: Sequence[tuple[AuditDraft, datetime]]) -> list[AuditEvent]:
        return self._operator(lambda conn: [self._append(conn, draft, now) for draft, now in items])

    def audit_events(self, query: AuditQuery) -> list[AuditEvent]:
        where, params = audit_sql(query, POSTGRES)
        rows = self._operator(
            lambda conn: conn.execute(f"SELECT {AUDIT_COLUMNS} FROM audit a" + where, params).fetchall(),
            read_only=True,
        )
        events = [row_to_event(r) for r in rows]
        return events[::-1] if descending(query) else events

    def audit_tip(self) -> tuple[int, str]:
        row = self._operator(
            lambda conn: conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone(),
            read_only=True,
        )
        return (row[0], row[1]) if row else (0, GENESIS)

    def verify_audit(self, anchor: tuple[int, str] | None = None) -> int | None:
        def body(conn: psycopg.Connection) -> tuple[tuple[Any, ...] | None, Rows]:
            head = conn.execute("SELECT seq, hash FROM audit_head").fetchone()
            return head, conn.execute(f"SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq").fetchall()

        head, rows = self._operator(body, read_only=True)
        events = []
        for row in rows:
            try:
                events.append(row_to_event(row))
            except (ValueError, KeyError, TypeError, json.JSONDecodeError):
                # An event whose stored fields no longer parse has been edited.
                return int(row[0])
        return first_bad_sequence(events, (head[0], head[1]) if head and head[0] > 0 else None, anchor)

    # ------------------------------------------------------------------ sessions

    @staticmethod
    def _record(row: Sequence[Any]) -> SessionRecord:
        return SessionRecord(
            id=dec(row[0]),
            agent_id=row[1],
            clearance=Level(row[2]),
            peers=tuple(json.loads(row[3])),
            taint=Level(row[4]),
            created_at=from_us(row[5]),
            owner=row[6],
        )

    def _session(self, conn: psycopg.Connection, session_id: str) -> SessionRecord:
        row = conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = %s", (enc(session_id),)
        ).fetchone()
        if row is None:
            raise NotFound(f"no session {session_id!r}")
        return self._record(row)

    def _bound_session(self, conn: psycopg.Connection, session_id: str, lock: str = "") -> SessionRecord:
        """Read the session row and bind the transaction to it, in one statement.

        ``set_config`` returns the value it set; should a locking read ever
        have bound values of another row version than the one it returns, the
        binding is redone from the returned row.
        """
        row = conn.execute(
            f"SELECT {SESSION_COLUMNS}, set_config('stratamem.taint', taint::text, true), "
            "set_config('stratamem.agents', (ARRAY[agent_id] || ARRAY(SELECT jsonb_array_elements_text(peers::jsonb)))"
            "::text, true), set_config('stratamem.agent', agent_id, true), set_config('stratamem.operator', '', true) "
            f"FROM sessions WHERE id = %s {lock}",
            (enc(session_id),),
        ).fetchone()
        if row is None:
            raise NotFound(f"no session {session_id!r}")
        record = self._record(row)
        if row[7] != str(int(record.taint)) or row[9] != record.agent_id:
            bind(conn, record.taint, record.agents, record.agent_id)
        return record

    def session_record(self, session_id: str) -> SessionRecord:
        rows = self._query(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = %s", (enc(session_id),))
        if not rows:
            raise NotFound(f"no session {session_id!r}")
        return self._record(rows[0])

    def open_session(
        self,
        agent_id: str,
        session_id: str | None,
        clearance: Level | None,
        peers: Sequence[str] | None,
        now: datetime,
        owner: str | None = None,
    ) -> SessionRecord:
        return self._write(
            lambda conn: sessions.open_session(
                conn, self._append, self._bound_session, agent_id, session_id, clearance, peers, now, owner
            )
        )

    def set_session_limits(
        self, session_id: str, clearance: Level | None, peers: Sequence[str] | None, now: datetime
    ) -> SessionRecord:
        return self._write(
            lambda conn: sessions.set_limits(
                conn, self._append, self._session, session_id, clearance, peers, now
            )
        )

    def escalate(
        self, session_id: str, level: Level, reason: str, source: str | None, now: datetime
    ) -> SessionRecord:
        def body(conn: psycopg.Connection) -> tuple[SessionRecord, ClearanceError | None]:
            record = self._bound_session(conn, session_id, "FOR UPDATE")

            def draft(outcome: str = "ok", detail: dict[str, Any] | None = None) -> AuditDraft:
                # At the level asked for when higher, as on SQLite: the reason describes material at that
                # level. The event is the transaction's last write; bind it to that level so the audit
                # policy (taint = the bound taint) accepts it.
                at = max(record.taint, level)
                if at != record.taint:
                    bind(conn, at, record.agents, record.agent_id)
                return AuditDraft(
                    "escalate",
                    record.id,
                    record.agent_id,
                    at,
                    levels=(level,),
                    outcome=outcome,
                    detail=detail or {},
                )

            if level > record.clearance:
                self._append(conn, draft("refused", {"reason": reason[:200]}), now)
                return record, ClearanceError(
                    f"cannot raise taint to {level.name}: the session's clearance is {record.clearance.name}"
                )
            if level > record.taint:
                conn.execute("UPDATE sessions SET taint = %s WHERE id = %s", (int(level), enc(session_id)))
                conn.execute(
                    "INSERT INTO taint_events (session_id, at_us, previous, new, reason, source) "
                    "VALUES (%s,%s,%s,%s,%s,%s)",
                    (enc(session_id), to_us(now), int(record.taint), int(level), enc(reason), enc(source)),
                )
                self._append(
                    conn, draft(detail={"reason": reason[:200], "source": source, "new": level.name}), now
                )
                return self._session(conn, session_id), None
            self._append(conn, draft("unchanged"), now)
            return record, None

        record, refused = self._write(body)
        if refused:
            raise refused
        return record

    def taint_history(self, session_id: str) -> list[TaintEvent]:
        rows = self._query(
            "SELECT at_us, previous, new, reason, source FROM taint_events WHERE session_id = %s ORDER BY ord",
            (enc(session_id),),
        )
        return [TaintEvent(from_us(a), Level(p), Level(n), dec(r), dec(s)) for a, p, n, r, s in rows]

    # ------------------------------------------------------------------ memories

    def save(self, session_id: str, draft: MemoryDraft, now: datetime) -> Memory:
        return self.save_many(session_id, [draft], now)[0]

    def save_many(self, session_id: str, drafts: Sequence[MemoryDraft], now: datetime) -> list[Memory]:
        """Every draft at the live taint read inside the one transaction; one audit event per record.

        One statement, the server-side ``sm_save`` (``pg_save``), in its own transaction; a single
        record goes to ``sm_save_one``, the same save from scalars.
        """
        locks = (self._store_lock, self._key_space)
        with self._errors():
            return run_autocommit(
                self._pool,
                lambda conn: pg_save.save_many(
                    conn, self.analyzer, locks, session_id, drafts, now, one=self._save_one
                ),
            )

    def _observe(
        self,
        session_id: str,
        now: datetime,
        op: str,
        reader: Callable[[psycopg.Connection, pg_search.Scope], T],
        returned: Callable[[T], list[Memory]],
        detail: Callable[[T], dict[str, Any]],
        conversations: Conversations = OWN,
    ) -> T:
        """Run ``reader`` over the session's visible view, then append its audit event.

        Each reader is a single statement in a read-only snapshot bound to the
        session; its event is then appended with the other appends queued at
        that moment (``audit_group``), and no result leaves the backend
        before that event is committed. Readers never hold the audit head.
        """

        def body(conn: psycopg.Connection) -> tuple[SessionRecord, T]:
            record = self._bound_session(conn, session_id)
            return record, reader(conn, pg_search.Scope(record, to_us(now), conversations))

        record, result = self._read(body)
        memories = returned(result)
        self.append_audit(
            AuditDraft(
                op,
                record.id,
                record.agent_id,
                record.taint,
                tuple(m.key for m in memories),
                tuple(m.level for m in memories),
                tuple(m.lineage_id for m in memories),
                detail=detail(result),
            ),
            now,
        )
        return result

    def get(
        self, session_id: str, key: str, now: datetime, conversations: Conversations = OWN
    ) -> Memory | None:
        return self._observe(
            session_id,
            now,
            "get",
            lambda conn, scope: pg_search.get(conn, scope, key),
            lambda found: [found] if found else [],
            lambda found: {"found": found is not None},
            conversations,
        )

    def list(
        self, session_id: str, query: ListQuery, now: datetime, conversations: Conversations = OWN
    ) -> Page:
        return self._observe(
            session_id,
            now,
            "list",
            lambda conn, scope: pg_search.listing(conn, scope, query),
            lambda found: found,
            lambda found: {"count": len(found), "tag_filter": query.tag is not None},
            conversations,
        )

    def search(
        self,
        session_id: str,
        terms: Sequence[str] | None,
        limit: int,
        now: datetime,
        mode: str = "lexical",
        query: QueryVector | None = None,
        conversations: Conversations = OWN,
    ) -> HitList:
        def reader(conn: psycopg.Connection, scope: pg_search.Scope) -> HitList:
            if terms is None:
                return pg_search.recent(conn, scope, limit)
            if mode != "lexical" and query is not None:
                return vectors.search(conn, scope, self._vtype, terms, limit, mode, query)
            return pg_search.ranked(conn, scope, terms, limit) if terms else []

        extra = {} if mode == "lexical" else {"mode": mode}
        return self._observe(
            session_id,
            now,
            "search",
            reader,
            lambda hits: [h.memory for h in hits],
            lambda hits: {"results": len(hits), "terms": len(terms or ()), **extra},
            conversations,
        )

    # ------------------------------------------------------------------ vectors (postgres/vectors.py)

    @property
    def vectors(self) -> PostgresBackend:
        """Search by meaning's vectors: this backend's own methods below (``protocol.VectorIndex``)."""
        return self

    def pending_vectors(
        self, session_id: str, limit: int, now: datetime, conversations: Conversations = OWN
    ) -> builtins.list[Pending]:
        def body(conn: psycopg.Connection) -> list[Pending]:
            record = self._bound_session(conn, session_id)
            return vectors.pending(conn, pg_search.Scope(record, to_us(now), conversations), limit)

        return self._read(body)

    def all_pending_vectors(self, limit: int) -> tuple[builtins.list[Pending], int]:
        return self._operator(lambda conn: vectors.all_pending(conn, limit), read_only=True)

    def store_vectors(self, model: str, items: Sequence[Any]) -> int:
        return self._operator(lambda conn: vectors.store_vectors(conn, self._vtype, model, items))

    def use_embedder(self, identity: str, reset: bool = False) -> None:
        self._operator(lambda conn: vectors.use_model(conn, identity, reset))

    def delete(self, session_id: str, key: str, now: datetime) -> Memory:
        now_us = to_us(now)

        def body(conn: psycopg.Connection) -> tuple[SessionRecord, Memory | None]:
            record = self._bound_session(conn, session_id, "FOR SHARE")
            self.lock_keys(conn, [(record.agent_id, key)])
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS}, length FROM memories WHERE agent_id = %s AND key = %s AND level = %s "
                "AND deleted_us IS NULL AND (expires_us IS NULL OR expires_us > %s)",
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
                return record, None
            memory = row_to_memory(row)
            index.remove_live(
                conn, self.analyzer, [(row[0], row[1], row[2], row[3], row[4], row[5], row[12])], now_us
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
            return record, memory

        record, memory = self._write(body)
        if memory is None:
            raise NotFound(f"no memory with key {key!r} at level {record.taint.name}")
        return memory

    # ------------------------------------------------------------------ shared bodies (storage/turn_store.py, the console)

    @property
    def transactions(self) -> PostgresBackend:
        """Shared bodies (the turn's records, the console's reads) run through this backend's own seam (row-level security binds each transaction)."""
        return self

    def erase_deleted(self, tables: str) -> str:
        """PostgreSQL keeps deleted rows' bytes in its files until the tables are rewritten: ``_vacuum``."""
        return self._vacuum(tables)

    def _import_turn_rows(
        self, conn: psycopg.Connection, records: Sequence[TranscriptMessage | UsageRecord], now: datetime
    ) -> int:
        count = transcripts.insert_rows(conn, POSTGRES, records)
        self._append(conn, transcripts.import_draft(records, count), now)
        return count

    # ------------------------------------------------------------------ operator actions

    def purge(self, before: datetime, agent_id: str | None, now: datetime) -> PurgeResult:
        before_us, now_us = to_us(before), to_us(now)
        agent_sql, agent_params = ("AND agent_id = %s", [agent_id]) if agent_id is not None else ("", [])

        def body(conn: psycopg.Connection) -> tuple[int, bool]:
            self.lock_store(conn)
            expired = conn.execute(
                "SELECT id, agent_id, key, level, content, tags, length FROM memories "
                "WHERE deleted_us IS NULL AND expires_us IS NOT NULL AND expires_us <= %s AND expires_us < %s "
                + agent_sql,
                [now_us, before_us, *agent_params],
            ).fetchall()
            index.remove_live(conn, self.analyzer, expired, deleted_us=None)
            deleted = conn.execute(
                "SELECT id FROM memories WHERE deleted_us IS NOT NULL AND deleted_us < %s " + agent_sql,
                [before_us, *agent_params],
            ).fetchall()
            ids = [r[0] for r in expired] + [r[0] for r in deleted]
            conn.execute("DELETE FROM memories WHERE id = ANY(%s::bigint[])", (ids,))
            vectors.forget(conn, ids)
            index.together(conn, [index.refresh_statement((r[1], r[2]) for r in expired)])
            graph = graph_write.purge(graph_sql.GraphConn(conn, POSTGRES), before_us, agent_id)
            self._append(
                conn,
                operator_draft(
                    "purge",
                    agent_id=agent_id,
                    detail={"purged": len(ids) + graph, "before": before.isoformat()},
                ),
                now,
            )
            unerased = conn.execute("SELECT value FROM meta WHERE name = 'purge_unerased'").fetchone()
            return len(ids) + graph, unerased is not None and unerased[0] == "1"

        count, unerased = self._operator(body)
        if not count and not unerased:
            return PurgeResult(0)
        remaining = self._vacuum()
        # Remembered in the store, so the next purge (from any process) finishes an earlier one's erasure.
        self._operator(
            lambda conn: conn.execute(
                "INSERT INTO meta (name, value) VALUES ('purge_unerased', %s) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                ("1" if remaining else "0",),
            )
        )
        return PurgeResult(count, not remaining, remaining)

    def restore_deleted(self, ref: int, clearance: Level, actor: str, now: datetime) -> Memory:
        return console.restore(self, ref, clearance, actor, now)

    def _vacuum(
        self, tables: str = f"memories, postings, term_stats, memory_vectors, {pg_graph.VACUUM_TABLES}"
    ) -> str:
        """Rewrite the tables that held purged content, so its bytes leave the table and index files.

        A plain VACUUM only marks dead tuples reusable; their bytes stay in the
        pages. VACUUM FULL copies the live rows into new files and drops the
        old ones, holding an exclusive lock on each table while it does
        (seconds for a large store: schedule purges accordingly). It must keep
        row versions that a transaction still running anywhere in the database
        might see, so while the server reports such versions it is repeated,
        briefly; if they outlast that, a warning says so. The application role
        may do this from PostgreSQL 17 (MAINTAIN, granted at migration); on
        older servers the schema owner must. The server's WAL, archives,
        replicas and backups keep history on their own retention (README).

        It never queues long behind a reader: VACUUM FULL waits for its
        exclusive lock at most ``_VACUUM_LOCK_TIMEOUT`` per attempt (while it
        waits, every other statement on those tables queues behind it). Returns
        "" when the bytes are gone, else what remains and how to finish.
        """
        problem = ""
        for attempt in range(_VACUUM_ATTEMPTS):
            notices: list[tuple[str, str]] = []

            def handler(diag: psycopg.errors.Diagnostic, notices: list[Any] = notices) -> None:
                notices.append((diag.severity_nonlocalized or "", diag.message_detail or ""))

            try:
                with self._pool.connection() as conn:
                    conn.add_notice_handler(handler)
                    conn.execute(f"SET lock_timeout = '{_VACUUM_LOCK_TIMEOUT}'")
                    try:
                        conn.execute(f"VACUUM (FULL, VERBOSE) {tables}")
                    finally:
                        conn.execute("RESET lock_timeout")
                        conn.remove_notice_handler(handler)
            except psycopg.errors.LockNotAvailable:
                problem = "another transaction kept the tables locked"
                time.sleep(0.05 * 2**attempt)
                continue
            except psycopg.Error as exc:
                problem = f"VACUUM FULL failed: {exc}"
                break
            if any(severity == "WARNING" for severity, _ in notices):
                problem = "the application role may not VACUUM these tables"
                break
            kept = sum(
                int(m.group(1))
                for severity, detail in notices
                if severity == "INFO"
                for m in [_LEADING_NUMBER.match(detail)]
                if m
            )
            if not kept:
                return ""
            problem = f"{kept} dead row version(s) were still visible to running transactions"
            time.sleep(0.05 * 2**attempt)
        return (
            f"{problem}, so PostgreSQL's files may still hold purged bytes; run purge again (any cutoff) "
            f"once those transactions end, or VACUUM FULL {tables} (as the schema owner "
            "before PostgreSQL 17)"
        )

    def export(self, agent_id: str | None, now: datetime) -> Iterator[Memory]:
        sql = (
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE deleted_us IS NULL "
            "AND (expires_us IS NULL OR expires_us > %s)"
        )
        params: list[object] = [to_us(now)]
        if agent_id is not None:
            sql += " AND agent_id = %s"
            params.append(agent_id)
        rows = self._operator(
            lambda conn: conn.execute(sql + " ORDER BY agent_id, key, level", params).fetchall(),
            read_only=True,
        )
        self.append_audit(operator_draft("export", agent_id=agent_id, detail={"count": len(rows)}), now)
        return iter([row_to_memory(r) for r in rows])

    def import_memories(
        self, memories: Iterable[Memory], now: datetime, turns: Sequence[TranscriptMessage | UsageRecord] = ()
    ) -> int:
        prepared = list(memories)

        def body(conn: psycopg.Connection) -> None:
            self.lock_store(conn)
            if turns:  # the turn's records of the same export: all or nothing with the memories
                self._import_turn_rows(conn, turns, now)
            index.write_versions(conn, self.analyzer, prepared, keep_created=False, now_us=to_us(now))
            self._append_many(conn, import_events(prepared), now)

        self._operator(body)
        return len(prepared)

    # ------------------------------------------------------------------ whole-store copy

    def dump(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every row that is the store's truth (not derived indexes), table by table, from one snapshot."""
        with self._errors(), self._pool.connection() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                bind_operator(conn)
                for table, (columns, order) in self.COPIED_TABLES.items():
                    names = [c.strip() for c in columns.split(",")]
                    escaped = self._ESCAPED[table]
                    with conn.cursor(name=f"dump_{table}") as cur:
                        cur.itersize = 2000
                        cur.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")
                        for row in cur:
                            values = dict(zip(names, row, strict=True))
                            for name in escaped:
                                values[name] = dec(values[name])
                            yield table, values
                head = conn.execute("SELECT seq, hash FROM audit_head").fetchone()
                if head and head[0] > 0:
                    yield "meta", {"name": "audit_head", "value": f"{head[0]}:{head[1]}"}
            finally:
                conn.execute("ROLLBACK")

    def restore(self, rows: Iterable[tuple[str, dict[str, Any]]]) -> int:
        """Load ``dump`` output (from either backend) into this empty store and rebuild the derived indexes."""

        def body(conn: psycopg.Connection) -> int:
            self.lock_store(conn)
            if one_row(
                conn.execute(
                    "SELECT EXISTS (SELECT 1 FROM memories UNION ALL SELECT 1 FROM audit "
                    "UNION ALL SELECT 1 FROM sessions UNION ALL SELECT 1 FROM turn_messages)"
                ).fetchone()
            )[0]:
                raise ValidationError("the target store is not empty")
            count = 0
            pending: dict[str, Rows] = {}
            for table, row in rows:
                if table == "meta":
                    if row.get("name") == "audit_head":
                        seq, _, digest = str(row["value"]).partition(":")
                        conn.execute("UPDATE audit_head SET seq = %s, hash = %s", (int(seq), digest))
                    continue
                if table not in self.COPIED_TABLES:
                    raise ValidationError(f"unknown table {table!r} in the copy stream")
                names = [c.strip() for c in self.COPIED_TABLES[table][0].split(",")]
                escaped = self._ESCAPED[table]
                try:
                    values = tuple(
                        enc(row[n]) if n in escaped else row[n] if n not in self._OPTIONAL else row.get(n)
                        for n in names
                    )
                except KeyError as exc:
                    raise ValidationError(f"row of {table!r} lacks column {exc}") from None
                batch = pending.setdefault(table, [])
                batch.append(values)
                count += 1
                if len(batch) >= index.CHUNK:
                    self._flush(conn, table, batch)
            for table in self.COPIED_TABLES:  # sessions before memories before audit, as dumped
                if pending.get(table):
                    self._flush(conn, table, pending[table])
            conn.execute(
                "SELECT setval(pg_get_serial_sequence('memories', 'id'), "
                "greatest((SELECT max(id) FROM memories), 1))"
            )
            for table in TURN_TABLES:
                conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"greatest((SELECT max(id) FROM {table}), 1))"
                )
            index.reindex(conn, self.analyzer)
            graph_write.reindex(graph_sql.GraphConn(conn, POSTGRES), self.analyzer)
            vectors.backfill(conn)
            return count

        return self._operator(body)

    def _flush(self, conn: psycopg.Connection, table: str, batch: Rows) -> None:
        columns = self.COPIED_TABLES[table][0]
        placeholders = ", ".join(["%s"] * len(columns.split(",")))
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", batch)
        batch.clear()

    # ------------------------------------------------------------------ knowledge graph (storage/sql/graph_read.py)

    @property
    def graph(self) -> pg_graph.Graph:
        """The graph's bodies run through this backend's own seam, with the graph's locks."""
        return pg_graph.Graph(self)
