"""Vectors on SQLite: int8 blobs per memory version, scored in numpy over the session's visible view.

Table ``vectors`` (one row per live or deleted-but-unpurged version):
``memory_id``, ``agent_id``, ``level``, ``live`` (0 once the version is
deleted), ``seq`` (bumped on every change, for cache sync), ``model`` (the
embedder identity; NULL = pending), ``scale`` and ``vec`` (``dim`` int8
codes, see ``search.dense``). Kept in step with ``memories`` inside the same
write transactions by thin hooks in ``SQLiteBackend``.

Scoring reads no blobs per query: each process keeps a ``VectorCache`` — a
float32 matrix of the codes with agent, level and scale per row — brought up
to date at the start of every dense search from rows whose ``seq`` is newer
than the cache's, or reloaded whole when ``meta.vectors_epoch`` changed
(purge, restore, a model change). The visible mask (agents, level <= taint,
live, this model, not hidden = expired or shadowed for this session) is
applied before any ranking, and dot products are exact (``search.dense``), so
scores of visible rows do not depend on any other row.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...embed import EmbedderError
from ...labels import visible_sql
from ...models import Hit
from ...search import fusion
from ...search.fusion import CANDIDATES
from ..sql.rows import memory_rows, row_to_memory
from ..vectors import (
    PENDING_COLUMNS,
    Candidate,
    DenseQuery,
    Pending,
    QueryVector,
    combine,
    contenders,
    embed_text,
    identity,
    order_candidates,
    when_ready,
)
from . import rank
from .rank import Scope

if TYPE_CHECKING:
    from .backend import SQLiteBackend

log = logging.getLogger("stratamem.vectors")

_NEXT_SEQ = "(SELECT coalesce(max(seq), 0) + 1 FROM vectors)"


def backfill(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO vectors(memory_id, agent_id, level, live, seq) "
        "SELECT id, agent_id, level, 1, id FROM memories WHERE deleted_us IS NULL"
    )
    bump_epoch(conn)


def bump_epoch(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO meta(name, value) VALUES ('vectors_epoch', '1') "
        "ON CONFLICT(name) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )


def mark_pending(conn: sqlite3.Connection, mem_id: int, agent: str, level: int) -> None:
    """A version was written: its old vector (if any) no longer describes it."""
    mark_pending_many(conn, [(mem_id, agent, level)])


def mark_pending_many(conn: sqlite3.Connection, versions: Sequence[tuple[int, str, int]]) -> None:
    """``mark_pending`` for a batch's versions (memory id, agent, level), in order, in one call.

    Only once the store has an embedder (``use_model``): until then a mark would be three B-tree pages
    (the row and two indexes) in every durable save's commit for vectors nobody makes, and ``use_model``
    marks every live version without one when the first embedder is recorded — decided by the statement
    itself inside the caller's write transaction (no separate read), so a save racing that from another
    process is marked either way.
    """
    if versions:
        conn.executemany(
            f"INSERT INTO vectors(memory_id, agent_id, level, live, seq) SELECT ?, ?, ?, 1, {_NEXT_SEQ} "
            "WHERE EXISTS (SELECT 1 FROM meta WHERE name = 'embedder') "
            "ON CONFLICT(memory_id) DO UPDATE SET live = 1, model = NULL, scale = NULL, vec = NULL, "
            "seq = excluded.seq",
            [(mem_id, agent, int(level)) for mem_id, agent, level in versions],
        )


def mark_dead(conn: sqlite3.Connection, mem_id: int) -> None:
    """A version left the live view (deleted, expired and purged): drop its vector bytes, keep a tombstone."""
    conn.execute(
        f"UPDATE vectors SET live = 0, model = NULL, scale = NULL, vec = NULL, seq = {_NEXT_SEQ} "
        "WHERE memory_id = ?",
        (mem_id,),
    )


def forget(conn: sqlite3.Connection, ids: Sequence[int]) -> None:
    """Purged versions: the rows go; caches reload."""
    if ids:
        conn.executemany("DELETE FROM vectors WHERE memory_id = ?", [(i,) for i in ids])
        bump_epoch(conn)


def use_model(conn: sqlite3.Connection, identity: str) -> None:
    """Record the store's embedder; vectors of another model become pending (re-embedded, never compared).

    The first embedder recorded also marks every live version that has no row yet (saved while the
    store had none, see ``mark_pending_many``) and bumps the epoch, so every process's cache reloads.
    """
    row = conn.execute("SELECT value FROM meta WHERE name = 'embedder'").fetchone()
    if row is not None and row[0] == identity:
        return
    if row is None:
        backfill(conn)
    stale = conn.execute(
        "SELECT count(*) FROM vectors WHERE model IS NOT NULL AND model != ?", (identity,)
    ).fetchone()[0]
    if stale:
        log.warning(
            "embedding model changed to %s: %d vectors will be re-embedded (run `stratamem reindex`)",
            identity,
            stale,
        )
        conn.execute(
            "UPDATE vectors SET model = NULL, scale = NULL, vec = NULL WHERE model IS NOT NULL AND model != ?",
            (identity,),
        )
        bump_epoch(conn)
    conn.execute(
        "INSERT INTO meta(name, value) VALUES ('embedder', ?) "
        "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
        (identity,),
    )


def pending(conn: sqlite3.Connection, scope: Scope, limit: int | None) -> list[Pending]:
    """Visible versions without a current vector.

    Driven from the small ``vectors_pending`` partial index (CROSS JOIN fixes the loop order): a store
    whose vectors are caught up answers without touching ``memories``.
    """
    sql = (
        f"SELECT {PENDING_COLUMNS} FROM vectors v CROSS JOIN memories d ON d.id = v.memory_id "
        f"WHERE v.live = 1 AND v.model IS NULL AND v.agent_id IN ({scope.agent_list}) AND {visible_sql('v.level')} "
        f"AND {scope.visible} ORDER BY v.memory_id"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [Pending(r[0], r[1], embed_text(r[2], r[3], r[4])) for r in conn.execute(sql, scope.params)]


def all_pending(conn: sqlite3.Connection, limit: int) -> list[Pending]:
    rows = conn.execute(
        f"SELECT {PENDING_COLUMNS} FROM vectors v JOIN memories d ON d.id = v.memory_id "
        "WHERE v.live = 1 AND v.model IS NULL AND d.deleted_us IS NULL ORDER BY d.id LIMIT ?",
        (limit,),
    ).fetchall()
    return [Pending(r[0], r[1], embed_text(r[2], r[3], r[4])) for r in rows]


def count_pending(conn: sqlite3.Connection) -> int:
    count: int = conn.execute("SELECT count(*) FROM vectors WHERE live = 1 AND model IS NULL").fetchone()[0]
    return count


def store_vectors(conn: sqlite3.Connection, model: str, items: Sequence[tuple[Any, ...]]) -> int:
    """Write (Pending, int8 codes, scale) items, each only if its memory is unchanged since it was read."""
    from ...search.dense import to_blob

    written = 0
    for item, codes, scale in items:
        cur = conn.execute(
            f"UPDATE vectors SET model = ?, scale = ?, vec = ?, seq = {_NEXT_SEQ} WHERE memory_id = ? AND live = 1 "
            "AND model IS NULL AND EXISTS (SELECT 1 FROM memories m WHERE m.id = ? AND m.updated_us = ? "
            "AND m.deleted_us IS NULL)",
            (model, float(scale), to_blob(codes), item.memory_id, item.memory_id, item.stamp),
        )
        written += cur.rowcount
    return written


def search(
    backend: SQLiteBackend,
    conn: sqlite3.Connection,
    scope: Scope,
    terms: Sequence[str] | None,
    limit: int,
    mode: str,
    query: QueryVector,
    weights: Mapping[str, float] | None = None,
) -> list[Hit]:
    """Semantic or hybrid ranking for one session inside its read transaction.

    The process's vector matrix is brought up to date here, in this transaction; then a worker thread
    ranks the dense side as soon as the query vector is there (``when_ready``: embedding, then the numpy
    passes), while this thread ranks BM25 in SQLite. Only the rows that can be in the answer are read
    (``_answer``; all the dense side's when the matrix is ahead of this snapshot or ties at its cut), and
    only the answer's become ``Memory``s.
    """
    if mode == "semantic" and pending(conn, scope, 1):
        log.info("visible records still wait for vectors; answering this semantic search as hybrid")
        mode = "hybrid"
    model, dim = identity(query)
    cache = backend.vector_cache()
    stats = rank.visible_stats(conn, scope)  # read once: the dense side's hidden ids, BM25's statistics
    hidden = stats[2]
    taint = scope.record.taint_code
    depth = fusion.DENSE_CANDIDATES
    # Readers run in parallel on their own connections (sqlite_readers); the shared matrix is brought
    # up to date, and ranked, by one of them at a time. The session's view of it is made here, while
    # the query is still being embedded, so the dense pass after the embedding starts from it.
    with backend._vector_lock:
        synced = cache.sync(conn, model, dim)
        cache.view(scope.agents, taint, hidden)

    def dense_top(dense_query: DenseQuery) -> tuple[list[tuple[int, float]], bool]:
        if (dense_query.model, dense_query.dim) != (model, dim):
            raise EmbedderError(
                f"the query vector is for {dense_query.model} ({dense_query.dim} dimensions), "
                f"expected {model} ({dim}): dimension mismatch"
            )
        with backend._vector_lock:
            # True: the matrix was still exactly this transaction's, so every row found is in its snapshot
            return cache.top(scope.agents, taint, hidden, dense_query, depth), cache.version == synced

    top_future = when_ready(query, dense_top)
    ranked = (
        rank.ranked_rows(conn, scope, terms, CANDIDATES, stats, weights)
        if (mode == "hybrid" and terms)
        else []
    )
    top, exact = top_future.result()
    if exact and len(top) <= depth:
        return _answer(conn, mode, ranked, top, scope.agents, limit)
    # Ties at the dense list's cut (decided by key, like every order) or a matrix ahead of this
    # snapshot: read every dense row, keep those this snapshot has, and merge the lists as candidates.
    dense: list[Candidate] = []
    if top:
        scores = dict(top)
        rows = memory_rows(conn, list(scores))
        dense = order_candidates(
            [Candidate(r[1], r[2], r[3], scores[r[0]], r) for r in rows], scope.agents, depth
        )
    lexical = [Candidate(r[1], r[2], r[3], score, r) for r, score in ranked]
    return combine(mode, lexical, dense, scope.agents, limit, row_to_memory)


def _answer(
    conn: sqlite3.Connection,
    mode: str,
    ranked: Sequence[tuple[Any, float]],
    top: Sequence[tuple[int, float]],
    agents: Sequence[str],
    limit: int,
) -> list[Hit]:
    """``combine``'s answer, reading only the rows that can be in it.

    Both lists are visible live versions, one per (agent, key, level), so a memory id stands for its
    version: the lists are fused by id, and only the ids scoring at least the ``limit``-th best (ties
    included, so the key can break them) need their rows — the lexical side's are already read.
    """
    if mode == "semantic":
        scores = fusion.semantic_scores(top)
    else:
        scores = fusion.fuse([(r[0], score) for r, score in ranked], top, fusion.DENSE_WEIGHT)
    if not scores:
        return []
    known = {r[0]: r for r, _ in ranked}
    wanted = contenders(scores, limit)
    rows = [known[i] for i in wanted if i in known] + memory_rows(conn, [i for i in wanted if i not in known])
    found = [Candidate(r[1], r[2], r[3], scores[r[0]], r) for r in rows]
    return [Hit(row_to_memory(c.row), c.score) for c in order_candidates(found, agents, limit)]
