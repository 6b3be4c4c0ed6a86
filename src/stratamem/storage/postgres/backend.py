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
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from hashlib import blake2b
from typing import Any

import psycopg

from ...audit import AuditDraft, seal
from ...errors import ClearanceError, NotFound, StorageError, StratamemError
from ...levels import Level
from ...models import AuditEvent, Hit, Memory, PurgeResult
from ...paging import ListQuery, Page
from ...scope import OWN, Conversations
from ...text import ANALYZER_VERSION, Analyzer
from .. import turn_store
from ..protocol import T
from ..records import MemoryDraft, SearchRequest, SessionRecord, SessionRequest, import_events, purge_event
from ..sql import declassification, deletion, graph_write, listing, sessions
from ..sql.audit_group import GroupAppender
from ..sql.dialect import POSTGRES
from ..sql.graph_read import GraphConn
from ..sql.rows import AUDIT_COLUMNS, event_to_row, one_row, to_us
from ..sql.transcripts import TranscriptMessage, UsageRecord
from ..transaction import Appender, Body, Tx, no_append, observed_read
from ..vectors import Pending
from . import copy, index, schema, vectors
from . import graph as pg_graph
from . import save as pg_save
from . import search as pg_search
from .connect import bind, bind_operator, configure, open_pool, parse_url, run, run_autocommit, run_on
from .rows import enc
from .schema import migrate_schema
from .vacuum import vacuum

# The class defines a method named ``list``; annotations inside it use these.
HitList = list[Hit]
Rows = list[tuple[Any, ...]]


class PostgresBackend:
    """Implements ``storage.base.Backend`` on one schema of a PostgreSQL database."""

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
                self._situated = schema.has_migration("occurred times and contexts")
                configure(conn, self.config)  # refuse a role that would bypass the policies, now and clearly
                self._vtype = vectors.vector_type(conn)
                run_on(conn, self._check_languages)
            self._pool = open_pool(self.config)
            self._audit_group = GroupAppender(self._append_group)
            self._versions = index.Versions(analyzer, self.lock_keys)
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
            graph_write.reindex(GraphConn(conn, POSTGRES), self.analyzer)
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

    # ------------------------------------------------------------------ sessions

    def _session(self, conn: psycopg.Connection, session_id: str) -> SessionRecord:
        return sessions.read(conn, POSTGRES, session_id)

    def _bound_session(self, conn: psycopg.Connection, session_id: str, lock: str = "") -> SessionRecord:
        """Read the session row and bind the transaction to it, in one statement.

        ``set_config`` returns the value it set; should a locking read ever
        have bound values of another row version than the one it returns, the
        binding is redone from the returned row.
        """
        row = conn.execute(
            f"SELECT {sessions.COLUMNS}, set_config('stratamem.taint', taint::text, true), "
            "set_config('stratamem.agents', (ARRAY[agent_id] || ARRAY(SELECT jsonb_array_elements_text(peers::jsonb)))"
            "::text, true), set_config('stratamem.agent', agent_id, true), set_config('stratamem.operator', '', true) "
            f"FROM sessions WHERE id = %s {lock}",
            (enc(session_id),),
        ).fetchone()
        if row is None:
            raise NotFound(f"no session {session_id!r}")
        record = sessions.record(row, POSTGRES)
        if row[7] != str(record.taint_code) or row[9] != record.agent_id:
            bind(conn, record.taint_code, record.agents, record.agent_id)
        return record

    def session_record(self, session_id: str) -> SessionRecord:
        rows = self._query(f"SELECT {sessions.COLUMNS} FROM sessions WHERE id = %s", (enc(session_id),))
        if not rows:
            raise NotFound(f"no session {session_id!r}")
        return sessions.record(rows[0], POSTGRES)

    def open_session(self, request: SessionRequest, now: datetime) -> SessionRecord:
        def body(conn: psycopg.Connection) -> SessionRecord:
            record, draft = sessions.open_body(conn, POSTGRES, self._bound_session, request, now)
            self._append(conn, draft, now)
            return record

        return self._write(body)

    def escalate(
        self, session_id: str, level: int, reason: str, source: str | None, now: datetime
    ) -> SessionRecord:
        def body(conn: psycopg.Connection) -> tuple[SessionRecord, ClearanceError | None]:
            before = self._bound_session(conn, session_id, "FOR UPDATE")
            # the event is the transaction's last write: bound to the joined label, the audit policy accepts it
            record, draft, refused = sessions.escalate_body(
                conn,
                POSTGRES,
                before,
                (level, reason, source),
                now,
                lambda at: bind(conn, at, before.agents, before.agent_id),
            )
            self._append(conn, draft, now)
            return record, refused

        record, refused = self._write(body)
        if refused:
            raise refused
        return record

    # ------------------------------------------------------------------ memories

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
                    conn,
                    self.analyzer,
                    locks,
                    session_id,
                    drafts,
                    now,
                    one=self._save_one,
                    situated=self._situated,
                ),
            )

    def _observed(
        self,
        session_id: str,
        now: datetime,
        op: str,
        reader: Callable[[psycopg.Connection, pg_search.Scope], T],
        returned: Callable[[T], Sequence[Memory]],
        detail: Callable[[T], dict[str, Any]],
        conversations: Conversations,
    ) -> T:
        """``reader`` over the session's visible view, a single statement in a read-only snapshot bound to
        the session; its event is then appended with the other appends queued at that moment
        (``audit_group``), and no result leaves the backend before that event is committed."""
        return observed_read(
            self,
            session_id,
            now,
            op,
            lambda tx: reader(tx.conn, pg_search.Scope(tx.record, to_us(now), conversations)),
            returned,
            detail,
        )

    def get(
        self, session_id: str, key: str, now: datetime, conversations: Conversations = OWN
    ) -> Memory | None:
        return self._observed(
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
        return self._observed(
            session_id,
            now,
            "list",
            lambda conn, scope: pg_search.listing(conn, scope, query),
            lambda found: found,
            lambda found: {"count": len(found), "tag_filter": query.tag is not None},
            conversations,
        )

    def search(self, session_id: str, request: SearchRequest, now: datetime) -> HitList:
        def reader(conn: psycopg.Connection, scope: pg_search.Scope) -> HitList:
            terms, limit = request.terms, request.limit
            if terms is None:
                return pg_search.recent(conn, scope, limit)
            if request.mode != "lexical" and request.query is not None:
                return vectors.search(
                    conn, scope, self._vtype, terms, limit, request.mode, request.query, request.weights
                )
            return pg_search.ranked(conn, scope, terms, limit, request.weights) if terms else []

        return self._observed(
            session_id,
            now,
            "search",
            reader,
            lambda hits: [h.memory for h in hits],
            request.detail,
            request.conversations,
        )

    def delete(self, session_id: str, key: str, now: datetime) -> Memory:
        return deletion.delete(self, self._versions, session_id, key, now)

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

    # ------------------------------------------------------------------ shared bodies (storage/turn_store.py, the console)

    @property
    def transactions(self) -> PostgresBackend:
        """Shared bodies (the turn's records, the console's reads) run through this backend's own seam (row-level security binds each transaction)."""
        return self

    def erase_deleted(self, tables: str) -> str:
        """PostgreSQL keeps deleted rows' bytes in its files until the tables are rewritten: ``vacuum``."""
        return vacuum(self._pool, tables)

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
            graph = graph_write.purge(GraphConn(conn, POSTGRES), before_us, agent_id)
            self._append(conn, purge_event(agent_id, len(ids) + graph, before), now)
            unerased = conn.execute("SELECT value FROM meta WHERE name = 'purge_unerased'").fetchone()
            return len(ids) + graph, unerased is not None and unerased[0] == "1"

        count, unerased = self._operator(body)
        if not count and not unerased:
            return PurgeResult(0)
        remaining = vacuum(self._pool)
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
        return self.operator(now, lambda tx: deletion.restore_body(tx, self._versions, ref, clearance, actor))

    def declassify(self, order: declassification.Order, now: datetime) -> tuple[Memory, int]:
        return self.operator(now, lambda tx: declassification.declassify_body(tx, self._versions, order))

    def export(self, agent_id: str | None, now: datetime) -> Iterator[Memory]:
        return listing.exported(self, agent_id, now)

    def import_memories(
        self, memories: Iterable[Memory], now: datetime, turns: Sequence[TranscriptMessage | UsageRecord] = ()
    ) -> int:
        prepared = list(memories)

        def body(tx: Tx[psycopg.Connection]) -> None:
            self.lock_store(tx.conn)
            if turns:  # the turn's records of the same export: all or nothing with the memories
                turn_store.import_body(tx, turns)
            index.write_versions(tx.conn, self.analyzer, prepared, keep_created=False, now_us=to_us(now))
            tx.append_many(import_events(prepared))

        self.operator(now, body)
        return len(prepared)

    # ------------------------------------------------------------------ whole-store copy (``copy``)

    def dump(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every row that is the store's truth (not derived indexes), table by table, from one snapshot."""
        with self._errors():
            yield from copy.dump(self._pool)

    def restore(self, rows: Iterable[tuple[str, dict[str, Any]]]) -> int:
        """Load ``dump`` output (from either backend) into this empty store and rebuild the derived indexes."""

        def body(conn: psycopg.Connection) -> int:
            self.lock_store(conn)
            return copy.restore(conn, self.analyzer, rows)

        return self._operator(body)

    # ------------------------------------------------------------------ knowledge graph (storage/sql/graph_read.py)

    @property
    def graph(self) -> pg_graph.Graph:
        """The graph's bodies run through this backend's own seam, with the graph's locks."""
        return pg_graph.Graph(self)
