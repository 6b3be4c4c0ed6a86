"""Index upkeep on PostgreSQL: versions, postings, partition and term statistics, shadowing flags.

The same derived state as the SQLite backend (see ARCHITECTURE.md), written
set-at-a-time: a batch of versions costs a handful of statements whatever its
size (arrays through ``unnest``; COPY is not allowed on tables with row-level
security). Imports, restores and rebuilds write through here; a session's
saves run the same upkeep inside the server (``pg_save``), and both record
each live version's terms (``memories.terms``). Callers hold the locks that
make the batch safe (``PostgresBackend.lock_keys``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import psycopg

from ...models import Memory, context_of
from ...text import Analyzer
from ..sql.rows import to_us
from . import vectors
from .rows import MEMORY_COLUMNS, dec, enc, row_to_memory

CHUNK = 2000
POSTINGS_PER_STATEMENT = 40_000

Statement = tuple[str, list[Any]]


def together(conn: psycopg.Connection, statements: Iterable[Statement | None]) -> None:
    """Run independent statements as one, in a single round trip.

    All but the last become data-modifying CTEs, which PostgreSQL runs in full
    whether or not they are referenced. They must not touch the same rows (and
    none may need to see another's changes): callers pass postings inserts,
    statistics upserts and the shadowing refresh, which never overlap.
    """
    todo = [st for st in statements if st is not None]
    if not todo:
        return
    *ctes, last = todo
    text = (
        "".join(f"{'WITH' if i == 0 else ','} s{i} AS ({sql}) " for i, (sql, _) in enumerate(ctes)) + last[0]
    )
    conn.execute(text, [p for _, params in todo for p in params])


def _columns(rows: Sequence[Sequence[Any]], width: int) -> list[list[Any]]:
    """Row tuples to per-column lists, the shape ``unnest`` takes."""
    return [[row[i] for row in rows] for i in range(width)]


class StatsDelta:
    """Per-(agent, level) changes to document count and total length, applied once in a fixed order."""

    def __init__(self) -> None:
        self._delta: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])

    def add(self, agent: str, level: int, n: int, length: int) -> None:
        entry = self._delta[(agent, int(level))]
        entry[0] += n
        entry[1] += length

    def statement(self) -> Statement | None:
        """The upsert, rows in a fixed order so concurrent writers lock them in the same order."""
        rows = sorted((a, lv, n, ln) for (a, lv), (n, ln) in self._delta.items() if n or ln)
        self._delta.clear()
        if not rows:
            return None
        sql = (
            "INSERT INTO part_stats (agent_id, level, n, total_len) "
            "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::bigint[]) "
            "ON CONFLICT (agent_id, level) DO UPDATE "
            "SET n = part_stats.n + excluded.n, total_len = part_stats.total_len + excluded.total_len"
        )
        return (sql, _columns(rows, 4))


class TermDelta:
    """Per-(term, agent, level) changes to document frequency, netted over a whole write and applied once.

    A version rewritten with mostly the same words nets to few changes. Rows
    are upserted in a fixed order (concurrent writers of a partition lock them
    alike), then the rows this write brought to zero are deleted, so a term no
    live version holds leaves no row (purge promises its bytes are gone).
    """

    def __init__(self) -> None:
        self._delta: dict[tuple[str, str, int], int] = defaultdict(int)

    def add(self, terms: Iterable[str], agent: str, level: int, sign: int) -> None:
        level = int(level)
        for term in terms:
            self._delta[(term, agent, level)] += sign

    def apply(self, conn: psycopg.Connection, *others: Statement | None) -> None:
        """Run the upsert together with ``others`` (statements on other tables), then drop rows now at zero."""
        rows = sorted((t, a, lv, d) for (t, a, lv), d in self._delta.items() if d)
        self._delta.clear()
        upsert = (
            "INSERT INTO term_stats (term, agent_id, level, df) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[]) "
            "ON CONFLICT (term, agent_id, level) DO UPDATE SET df = term_stats.df + excluded.df"
        )
        upserts: list[Statement] = [
            (upsert, _columns(rows[start : start + POSTINGS_PER_STATEMENT], 4))
            for start in range(0, len(rows), POSTINGS_PER_STATEMENT)
        ]
        # ``others`` go last: a trailing SELECT (the shadowing refresh) only runs as the main statement.
        together(conn, [*upserts, *others])
        emptied = [r[:3] for r in rows if r[3] < 0]
        for start in range(0, len(emptied), POSTINGS_PER_STATEMENT):
            conn.execute(
                "DELETE FROM term_stats t USING unnest(%s::text[], %s::text[], %s::bigint[]) "
                "AS u(term, agent_id, level) "
                "WHERE t.term = u.term AND t.agent_id = u.agent_id AND t.level = u.level AND t.df <= 0",
                _columns(emptied[start : start + POSTINGS_PER_STATEMENT], 3),
            )


def postings_statements(
    entries: Iterable[tuple[int, str, int, dict[str, int], int]], counts: TermDelta | None
) -> list[Statement]:
    """Insert postings for (memory id, agent, level, term frequencies, length); they carry agent, level, length.

    The documents' terms are counted into ``counts`` (None: the caller recounts term_stats itself).
    """
    entries = list(entries)
    if counts is not None:
        for _mem_id, agent, level, terms, _length in entries:
            counts.add(terms, agent, level, +1)
    # Sorted by term: a bulk load then stores each term's postings side by side,
    # so a search reads a few heap pages per term instead of one per posting.
    rows = sorted(
        (term, agent, int(level), mem_id, tf, length)
        for mem_id, agent, level, terms, length in entries
        for term, tf in terms.items()
    )
    sql = (
        "INSERT INTO postings (term, agent_id, level, memory_id, tf, length) "
        "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::int[], %s::int[])"
    )
    return [
        (sql, _columns(rows[start : start + POSTINGS_PER_STATEMENT], 6))
        for start in range(0, len(rows), POSTINGS_PER_STATEMENT)
    ]


def drop_postings(
    conn: psycopg.Connection,
    analyzer: Analyzer,
    rows: Iterable[tuple[int, str, int, str, str, str]],
    counts: TermDelta,
) -> None:
    """Remove the postings of (id, agent, level, key, stored content, tags JSON): re-derive the terms, delete by key.

    The documents' terms are counted out of ``counts`` for the caller to apply.
    """
    keys: list[tuple[str, str, int, int]] = []
    for mem_id, agent, level, key, content, tags in rows:
        terms, _ = analyzer.document_terms(key, dec(content), json.loads(tags))
        keys.extend((term, agent, int(level), mem_id) for term in terms)
        counts.add(terms, agent, level, -1)
    for start in range(0, len(keys), POSTINGS_PER_STATEMENT):
        part = keys[start : start + POSTINGS_PER_STATEMENT]
        conn.execute(
            "DELETE FROM postings p USING unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[]) "
            "AS u(term, agent_id, level, memory_id) "
            "WHERE p.term = u.term AND p.agent_id = u.agent_id AND p.level = u.level AND p.memory_id = u.memory_id",
            _columns(part, 4),
        )


def refresh_statement(pairs: Iterable[tuple[str, str]]) -> Statement | None:
    """Re-flag the live versions of these (agent, key) pairs that a higher live version could shadow."""
    unique = sorted(set(pairs))
    if not unique:
        return None
    return ("SELECT sm_refresh_shadowable(%s::text[], %s::text[])", _columns(unique, 2))


def write_versions(
    conn: psycopg.Connection, analyzer: Analyzer, memories: Sequence[Memory], keep_created: bool, now_us: int
) -> list[Memory]:
    """Insert or update the live version at each (agent, key, label); returns what is stored, in input order.

    A version is stored at its label's integer (``Memory.label_code``: level and compartment bits).

    ``keep_created`` (a save) keeps an existing version's created time and
    lineage; an import replaces every field. Within one batch the last memory
    for an (agent, key, level) wins, as if they had been written one by one.
    A version expired at ``now_us`` is never updated: it is retired (marked
    deleted as of its expiry) and a fresh record is inserted, so an expired
    record behaves exactly like an absent one.
    """
    latest: dict[tuple[str, str, int], Memory] = {}
    for memory in memories:
        latest[(memory.agent_id, memory.key, memory.label_code)] = memory
    stored: dict[tuple[str, str, int], Memory] = {}
    stats, terms = StatsDelta(), TermDelta()
    items = list(latest.items())
    postings: list[Statement | None] = []  # None: nothing to mark (``together`` skips it)
    for start in range(0, len(items), CHUNK):
        chunk = items[start : start + CHUNK]
        stored.update(_write_chunk(conn, analyzer, chunk, keep_created, now_us, stats, terms, postings))
        if len(postings) > 1:
            together(conn, postings)
            postings.clear()
    terms.apply(
        conn, *postings, stats.statement(), refresh_statement((agent, key) for agent, key, _ in latest)
    )
    return [stored[(m.agent_id, m.key, m.label_code)] for m in memories]


def _write_chunk(
    conn: psycopg.Connection,
    analyzer: Analyzer,
    chunk: list[tuple[tuple[str, str, int], Memory]],
    keep_created: bool,
    now_us: int,
    stats: StatsDelta,
    counts: TermDelta,
    postings: list[Statement | None],
) -> dict[tuple[str, str, int], Memory]:
    """Write one chunk's versions; their postings are appended to ``postings`` for the caller to send."""
    ident = _columns([key for key, _ in chunk], 3)
    existing = {
        (r[1], r[2], r[3]): r
        for r in conn.execute(
            "SELECT m.id, m.agent_id, m.key, m.level, m.content, m.tags, m.length, m.created_us, m.lineage_id, "
            "m.expires_us "
            "FROM memories m JOIN unnest(%s::text[], %s::text[], %s::bigint[]) AS u(agent_id, key, level) "
            "ON m.agent_id = u.agent_id AND m.key = u.key AND m.level = u.level WHERE m.deleted_us IS NULL",
            ident,
        )
    }
    analysed = {key: analyzer.document_terms(m.key, m.content, m.tags) for key, m in chunk}
    drop_postings(conn, analyzer, ((r[0], r[1], r[3], r[2], r[4], r[5]) for r in existing.values()), counts)
    expired = [r for r in existing.values() if r[9] is not None and r[9] <= now_us]
    if expired:
        # Retired as if deleted when they expired (purge treats them as before); the unique live index
        # needs this before the fresh rows are inserted.
        conn.execute(
            "UPDATE memories m SET deleted_us = m.expires_us, shadowable = false, terms = NULL "
            "WHERE m.id = ANY(%s::bigint[])",
            ([r[0] for r in expired],),
        )
        for r in expired:
            stats.add(r[1], r[3], -1, -r[6])
            del existing[(r[1], r[2], r[3])]

    updates, inserts = [], []
    for key, m in chunk:
        length = analysed[key][1]
        tags = json.dumps(list(m.tags))
        expires = to_us(m.expires_at) if m.expires_at else None
        old = existing.get(key)
        if old is not None:
            created = old[7] if keep_created else to_us(m.created_at)
            lineage = old[8] if keep_created else m.lineage_id
            stats.add(m.agent_id, m.label_code, 0, length - old[6])
            updates.append(
                (
                    old[0],
                    enc(m.content),
                    tags,
                    m.category,
                    enc(m.session_id),
                    created,
                    to_us(m.updated_at),
                    lineage,
                    expires,
                    length,
                    " ".join(analysed[key][0]),
                    to_us(m.occurred_at),
                    context_of(m),
                )
            )
        else:
            stats.add(m.agent_id, m.label_code, 1, length)
            inserts.append(
                (
                    m.agent_id,
                    m.key,
                    m.label_code,
                    enc(m.content),
                    tags,
                    m.category,
                    enc(m.session_id),
                    to_us(m.created_at),
                    to_us(m.updated_at),
                    m.lineage_id,
                    expires,
                    length,
                    " ".join(analysed[key][0]),
                    to_us(m.occurred_at),
                    context_of(m),
                )
            )
    rows: list[Sequence[Any]] = []
    if updates:
        rows += conn.execute(
            "UPDATE memories m SET content = u.content, tags = u.tags, category = u.category, "
            "session_id = u.session_id, created_us = u.created_us, updated_us = u.updated_us, "
            "lineage_id = u.lineage_id, expires_us = u.expires_us, length = u.length, terms = u.terms, "
            "occurred_us = u.occurred_us, context = u.context "
            "FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[], "
            "%s::text[], %s::bigint[], %s::int[], %s::text[], %s::bigint[], %s::text[]) AS u(id, content, tags, "
            "category, session_id, created_us, updated_us, lineage_id, expires_us, length, terms, occurred_us, context) "
            f"WHERE m.id = u.id RETURNING {', '.join('m.' + c for c in MEMORY_COLUMNS.split(', '))}",
            _columns(updates, 13),
        ).fetchall()
    if inserts:
        rows += conn.execute(
            "INSERT INTO memories (agent_id, key, level, content, tags, category, session_id, created_us, "
            "updated_us, lineage_id, expires_us, length, terms, occurred_us, context) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::text[], %s::text[], %s::text[], "
            "%s::text[], %s::bigint[], %s::bigint[], %s::text[], %s::bigint[], %s::int[], %s::text[], "
            "%s::bigint[], %s::text[]) "
            f"RETURNING {MEMORY_COLUMNS}",
            _columns(inserts, 15),
        ).fetchall()
    out: dict[tuple[str, str, int], Memory] = {}
    entries = []
    for row in rows:
        key = (row[1], row[2], row[3])
        out[key] = row_to_memory(row)
        terms, length = analysed[key]
        entries.append((row[0], row[1], row[3], terms, length))
    postings.extend(postings_statements(entries, counts))
    postings.append(vectors.pending_statement(rows))
    return out


def remove_live(
    conn: psycopg.Connection,
    analyzer: Analyzer,
    rows: Sequence[tuple[int, str, str, int, str, str, int]],
    deleted_us: int | None,
) -> None:
    """Take live versions (id, agent, key, level, content, tags, length) out of the index and statistics.

    With ``deleted_us`` they are soft-deleted (row kept); without, the caller
    is about to hard-delete them (purge of expired versions).
    """
    if not rows:
        return
    terms = TermDelta()
    drop_postings(conn, analyzer, ((r[0], r[1], r[3], r[2], r[4], r[5]) for r in rows), terms)
    vectors.mark_dead(conn, [r[0] for r in rows])
    if deleted_us is not None:
        conn.execute(
            "UPDATE memories SET deleted_us = %s, shadowable = false, terms = NULL WHERE id = ANY(%s::bigint[])",
            (deleted_us, [r[0] for r in rows]),
        )
        refresh = refresh_statement((r[1], r[2]) for r in rows)
    else:
        refresh = None  # the caller deletes the rows next, then refreshes what remains
    stats = StatsDelta()
    for _id, agent, _key, level, _content, _tags, length in rows:
        stats.add(agent, level, -1, -length)
    terms.apply(conn, stats.statement(), refresh)


class Versions:
    """``sql.deletion.Versions`` on PostgreSQL: key locks (``lock_keys``), set-at-a-time index upkeep."""

    def __init__(
        self, analyzer: Analyzer, lock_keys: Callable[[psycopg.Connection, Iterable[tuple[str, str]]], None]
    ) -> None:
        self.analyzer = analyzer
        self.lock = lock_keys

    def retire(self, conn: psycopg.Connection, rows: Sequence[Sequence[Any]], deleted_us: int | None) -> None:
        remove_live(conn, self.analyzer, [tuple(r) for r in rows], deleted_us)

    def revive(self, conn: psycopg.Connection, row: Sequence[Any]) -> None:
        mem_id, agent, key, level, content, tags = row[:6]
        terms, length = self.analyzer.document_terms(key, dec(content), json.loads(tags))
        conn.execute(
            "UPDATE memories SET deleted_us = NULL, length = %s, terms = %s WHERE id = %s",
            (length, " ".join(terms), mem_id),
        )
        counts, stats = TermDelta(), StatsDelta()
        stats.add(agent, level, 1, length)
        postings = postings_statements([(mem_id, agent, level, terms, length)], counts)
        counts.apply(conn, *postings, stats.statement(), refresh_statement([(agent, key)]))

    def write(self, conn: psycopg.Connection, memory: Memory, now_us: int) -> Memory:
        """One version written as an import writes it (``sql.declassification.Writer``)."""
        return write_versions(conn, self.analyzer, [memory], keep_created=False, now_us=now_us)[0]


def reindex(conn: psycopg.Connection, analyzer: Analyzer) -> None:
    """Rebuild postings, statistics and shadowing flags from the live versions (operator transaction)."""
    conn.execute("DELETE FROM postings")
    conn.execute("DELETE FROM part_stats")
    conn.execute("DELETE FROM term_stats")
    stats = StatsDelta()
    last_id = 0
    while True:
        batch = conn.execute(
            "SELECT id, agent_id, level, key, content, tags FROM memories "
            "WHERE deleted_us IS NULL AND id > %s ORDER BY id LIMIT %s",
            (last_id, CHUNK),
        ).fetchall()
        if not batch:
            break
        last_id = batch[-1][0]
        entries = []
        for mem_id, agent, level, key, content, tags in batch:
            terms, length = analyzer.document_terms(key, dec(content), json.loads(tags))
            entries.append((mem_id, agent, level, terms, length))
            stats.add(agent, level, 1, length)
        conn.execute(
            "UPDATE memories m SET length = u.length, terms = u.terms "
            "FROM unnest(%s::bigint[], %s::int[], %s::text[]) AS u(id, length, terms) "
            "WHERE m.id = u.id AND (m.length, m.terms) IS DISTINCT FROM (u.length, u.terms)",
            ([e[0] for e in entries], [e[4] for e in entries], [" ".join(e[3]) for e in entries]),
        )
        together(conn, postings_statements(entries, None))
    together(conn, [stats.statement()])
    conn.execute(
        "INSERT INTO term_stats (term, agent_id, level, df) "
        "SELECT term, agent_id, level, count(*) FROM postings GROUP BY term, agent_id, level"
    )
    conn.execute(
        "SELECT sm_refresh_shadowable(coalesce(array_agg(agent_id), '{}'), coalesce(array_agg(key), '{}')) "
        "FROM (SELECT DISTINCT agent_id, key FROM memories WHERE deleted_us IS NULL) AS live"
    )
