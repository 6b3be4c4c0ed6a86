"""Vectors on PostgreSQL: pgvector columns under the same row-level security as memories.

``memory_vectors`` (migration 6 in ``migrations.py``) mirrors SQLite's ``vectors`` (``sqlite/vectors.py``):
one row per version with agent, level, ``live``, ``model`` (NULL = pending),
``scale`` and the int8 codes stored as a pgvector ``vector`` (or ``real[]``
where the extension is not available: slower, same answers). Policies: read
as ``memories`` (agents of the session, label <= taint); insert/update only
at the writer's own agent and taint label (the save's pending mark); embeddings
themselves are written by trusted code in operator mode (they are derived
from content the session was allowed to read, as ``sm_refresh_shadowable``
derives flags), and deleted only by the operator (purge).

Ranking runs in SQL over the session's visible view (``search.Scope``),
exactly: pgvector sums integer-valued floats, which is exact in any order,
and the score is ``(dot * scale) * query_scale`` in float8 as in numpy — so
SQLite and PostgreSQL return the same dense scores for the same store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import psycopg

from ...models import Hit
from ...search.fusion import CANDIDATES, DENSE_CANDIDATES
from ..sql.rows import one_row
from ..vectors import (
    PENDING_COLUMNS,
    Candidate,
    Pending,
    QueryVector,
    as_memory,
    combine,
    embed_text,
    from_hits,
    order_candidates,
    resolve,
)
from .rows import dec, row_to_memory
from .search import D_COLUMNS, Scope


def vector_type(conn: psycopg.Connection) -> str | None:
    """The qualified pgvector type of ``memory_vectors.vec``, or None when it is ``real[]``."""
    row = conn.execute(
        "SELECT n.nspname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "JOIN pg_namespace n ON n.oid = t.typnamespace "
        "WHERE a.attrelid = 'memory_vectors'::regclass AND a.attname = 'vec'"
    ).fetchone()
    if row is None or row[1] != "vector":
        return None
    return f'"{row[0]}".vector'


def pending_statement(rows: Sequence[Sequence[Any]]) -> tuple[str, list[Any]] | None:
    """Mark written versions (rows led by id, agent, key, level) pending: runs with their postings."""
    if not rows:
        return None
    return (
        "INSERT INTO memory_vectors (memory_id, agent_id, level, live) "
        "SELECT u.id, u.agent_id, u.level, true FROM unnest(%s::bigint[], %s::text[], %s::bigint[]) "
        "AS u(id, agent_id, level) ON CONFLICT (memory_id) DO UPDATE SET live = true, model = NULL, "
        "scale = NULL, vec = NULL",
        [[r[0] for r in rows], [r[1] for r in rows], [r[3] for r in rows]],
    )


def mark_dead(conn: psycopg.Connection, ids: Sequence[int]) -> None:
    if ids:
        conn.execute(
            "UPDATE memory_vectors SET live = false, model = NULL, scale = NULL, vec = NULL "
            "WHERE memory_id = ANY(%s::bigint[])",
            (list(ids),),
        )


def forget(conn: psycopg.Connection, ids: Sequence[int]) -> None:
    if ids:
        conn.execute("DELETE FROM memory_vectors WHERE memory_id = ANY(%s::bigint[])", (list(ids),))


def backfill(conn: psycopg.Connection) -> None:
    conn.execute(
        "INSERT INTO memory_vectors (memory_id, agent_id, level, live) "
        "SELECT id, agent_id, level, true FROM memories WHERE deleted_us IS NULL ON CONFLICT DO NOTHING"
    )


def use_model(conn: psycopg.Connection, identity: str, reset: bool) -> None:
    """Operator transaction: vectors of another model (all, with ``reset``) become pending."""
    row = conn.execute("SELECT value FROM meta WHERE name = 'embedder'").fetchone()
    if row is not None and row[0] == identity and not reset:
        return
    if reset:
        conn.execute(
            "UPDATE memory_vectors SET model = NULL, scale = NULL, vec = NULL WHERE model IS NOT NULL"
        )
    else:
        conn.execute(
            "UPDATE memory_vectors SET model = NULL, scale = NULL, vec = NULL "
            "WHERE model IS NOT NULL AND model <> %s",
            (identity,),
        )
    conn.execute(
        "INSERT INTO meta (name, value) VALUES ('embedder', %s) "
        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        (identity,),
    )


def _pending(rows: Sequence[Sequence[Any]]) -> list[Pending]:
    return [Pending(r[0], r[1], embed_text(r[2], dec(r[3]), r[4])) for r in rows]


def pending(conn: psycopg.Connection, scope: Scope, limit: int) -> list[Pending]:
    return _pending(
        conn.execute(
            f"SELECT {PENDING_COLUMNS} FROM memory_vectors v JOIN memories d ON d.id = v.memory_id "
            f"WHERE v.live AND v.model IS NULL AND {scope.visible} ORDER BY d.id LIMIT %(limit)s",
            {**scope.params, "limit": limit},
        ).fetchall()
    )


def all_pending(conn: psycopg.Connection, limit: int) -> tuple[list[Pending], int]:
    rows = conn.execute(
        f"SELECT {PENDING_COLUMNS} FROM memory_vectors v JOIN memories d ON d.id = v.memory_id "
        "WHERE v.live AND v.model IS NULL AND d.deleted_us IS NULL ORDER BY d.id LIMIT %s",
        (limit,),
    ).fetchall()
    total: int = one_row(
        conn.execute("SELECT count(*) FROM memory_vectors WHERE live AND model IS NULL").fetchone()
    )[0]
    return _pending(rows), total


def _literal(codes: Iterable[int]) -> str:
    return "[" + ",".join(str(int(c)) for c in codes) + "]"


def store_vectors(
    conn: psycopg.Connection, vtype: str | None, model: str, items: Sequence[tuple[Any, ...]]
) -> int:
    """Operator transaction: write (Pending, codes, scale) items whose memory is unchanged since read."""
    if not items:
        return 0
    cast = f"{vtype}" if vtype else "real[]"
    texts = [_literal(c) if vtype else "{" + ",".join(str(int(x)) for x in c) + "}" for _, c, _ in items]
    cur = conn.execute(
        f"UPDATE memory_vectors v SET model = %s, scale = u.scale, vec = u.vec::{cast} "
        "FROM unnest(%s::bigint[], %s::bigint[], %s::float8[], %s::text[]) AS u(id, stamp, scale, vec) "
        "JOIN memories m ON m.id = u.id AND m.updated_us = u.stamp AND m.deleted_us IS NULL "
        "WHERE v.memory_id = u.id AND v.live AND v.model IS NULL",
        (
            model,
            [p.memory_id for p, _, _ in items],
            [p.stamp for p, _, _ in items],
            [float(s) for _, _, s in items],
            texts,
        ),
    )
    return cur.rowcount


def search(
    conn: psycopg.Connection,
    scope: Scope,
    vtype: str | None,
    terms: Sequence[str] | None,
    limit: int,
    mode: str,
    query: QueryVector,
    weights: Mapping[str, float] | None = None,
) -> list[Hit]:
    """Semantic or hybrid ranking over the session's visible view, in the reader's snapshot.

    The lexical side is ranked first, while the query may still be embedding (``vectors.resolve``).
    """
    from . import search as pg_search

    if (
        mode == "semantic"
        and conn.execute(
            "SELECT 1 FROM memory_vectors v JOIN memories d ON d.id = v.memory_id "
            f"WHERE v.live AND v.model IS NULL AND {scope.visible} LIMIT 1",
            scope.params,
        ).fetchone()
    ):
        mode = "hybrid"  # visible records still wait for vectors: the lexical side covers them
    lexical = (
        from_hits(pg_search.ranked(conn, scope, terms, CANDIDATES, weights))
        if (mode == "hybrid" and terms)
        else []
    )
    vector = resolve(query)
    if vtype:
        dot = f"(-(v.vec OPERATOR({vtype.rsplit('.', 1)[0]}.<#>) %(q)s::{vtype}))"
        q: str | list[float] = _literal(vector.codes)
    else:
        dot = "(SELECT sum(a * b) FROM unnest(v.vec, %(q)s::real[]) AS t(a, b))::float8"
        q = [float(c) for c in vector.codes]
    params = {
        **scope.params,
        "q": q,
        "model": vector.model,
        "qs": float(vector.scale),
        "floor": vector.floor,
        "skip": DENSE_CANDIDATES - 1,
    }
    rows = conn.execute(
        f"""WITH s AS MATERIALIZED (
              SELECT d.id, ({dot} * v.scale) * %(qs)s::float8 AS score
              FROM memory_vectors v JOIN memories d ON d.id = v.memory_id
              WHERE v.live AND v.model = %(model)s AND {scope.visible}),
            f AS (SELECT id, score FROM s WHERE score >= %(floor)s::float8),
            k AS (SELECT score FROM f ORDER BY score DESC OFFSET %(skip)s LIMIT 1)
            SELECT {D_COLUMNS}, f.score FROM f JOIN memories d ON d.id = f.id
            WHERE f.score >= coalesce((SELECT score FROM k), '-Infinity'::float8)""",
        params,
    ).fetchall()
    dense = order_candidates(
        [Candidate(r[1], r[2], int(r[3]), float(r[-1]), row_to_memory(r[:-1])) for r in rows],
        scope.agents,
        DENSE_CANDIDATES,
    )
    return combine(mode, lexical, dense, scope.agents, limit, as_memory)
