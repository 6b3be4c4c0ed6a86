"""A session's visible view and BM25 ranking over it, in PostgreSQL.

A statement-for-statement port of the SQLite backend's design (see
``sqlite._Scope`` and ``SQLiteBackend._ranked``): statistics come from
``part_stats`` over the session's partitions minus the versions hidden from it
(expired or shadowed), document frequencies are counted over visible postings
in the statement that scores, each contribution is truncated to a fixed-point
integer before summing, and ties are ordered by key then agent. The float
expression is written operation for operation as SQLite evaluates it (double
precision throughout, truncation toward zero), so both backends return the
same keys, order and scores for the same store.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from .. import ranking
from ..models import Hit, Memory
from .base import SessionRecord
from .pg_rows import MEMORY_COLUMNS, row_to_memory

D_COLUMNS = ", ".join("d." + c for c in MEMORY_COLUMNS.split(", "))

_CONTRIBUTION = (
    "trunc(ln(1.0::float8 + ((bm.n - df)::float8 + 0.5::float8) / (df::float8 + 0.5::float8))"
    " * tf::float8 * %(k1p)s::float8"
    " / (tf::float8 + %(k1)s::float8 * (%(omb)s::float8 + %(b)s::float8 * len::float8 / bm.avgdl))"
    " * %(scale)s::float8)::bigint"
)


class Scope:
    """SQL fragments and parameters for one session's visible view (rows aliased ``d``)."""

    def __init__(self, record: SessionRecord, now_us: int) -> None:
        self.record = record
        self.agents = list(record.agents)
        self.params: dict[str, object] = {"lvl": int(record.taint), "now": now_us, "agents": self.agents}
        self.in_scope = "d.agent_id = ANY(%(agents)s::text[]) AND d.level <= %(lvl)s AND d.deleted_us IS NULL"
        self.visible = f"""{self.in_scope}
            AND (d.expires_us IS NULL OR d.expires_us > %(now)s)
            AND (NOT d.shadowable OR NOT EXISTS (
                SELECT 1 FROM memories h
                WHERE h.agent_id = d.agent_id AND h.key = d.key AND h.level > d.level
                  AND h.level <= %(lvl)s AND h.deleted_us IS NULL
                  AND (h.expires_us IS NULL OR h.expires_us > %(now)s)))"""
        self.rank = "array_position(%(agents)s::text[], d.agent_id)"


def get(conn: psycopg.Connection, scope: Scope, key: str) -> Memory | None:
    """The highest visible version of ``key``: own agent first, then peers in order."""
    row = conn.execute(
        f"SELECT {D_COLUMNS} FROM memories d WHERE d.key = %(key)s AND {scope.in_scope} "
        f"AND (d.expires_us IS NULL OR d.expires_us > %(now)s) ORDER BY {scope.rank}, d.level DESC LIMIT 1",
        {**scope.params, "key": key},
    ).fetchone()
    return row_to_memory(row) if row else None


def listing(conn: psycopg.Connection, scope: Scope, tag: str | None) -> list[Memory]:
    sql = f"SELECT {D_COLUMNS} FROM memories d WHERE {scope.visible}"
    params = dict(scope.params)
    if tag is not None:
        sql += " AND d.tags::jsonb @> jsonb_build_array(%(tag)s::text)"
        params["tag"] = tag
    return [row_to_memory(r) for r in conn.execute(sql + f" ORDER BY {scope.rank}, d.key", params)]


def recent(conn: psycopg.Connection, scope: Scope, limit: int) -> list[Hit]:
    rows = conn.execute(
        f"SELECT {D_COLUMNS} FROM memories d WHERE {scope.visible} "
        f"ORDER BY d.updated_us DESC, d.key, {scope.rank} LIMIT %(limit)s",
        {**scope.params, "limit": limit},
    ).fetchall()
    return [Hit(row_to_memory(r), 0.0) for r in rows]


def ranked(conn: psycopg.Connection, scope: Scope, terms: Sequence[str], limit: int) -> list[Hit]:
    """BM25 over the visible view in one statement (one snapshot, one round trip).

    ``hidden``: live versions in the session's partitions that it cannot see
    (expired, or shadowed by a higher visible version). ``stats``: document
    count and total length from ``part_stats`` minus the hidden versions.
    ``j``: visible postings of the query terms; ``f``: each term's document
    frequency over those visible postings only. ``g``: fixed-point sums per
    memory; ``top``: the cut, before any memory row is fetched.
    """
    params = {**scope.params, "terms": list(terms), "scale": float(ranking.SCORE_SCALE), "k1": ranking.K1,
              "k1p": ranking.K1 + 1.0, "b": ranking.B, "omb": 1.0 - ranking.B}
    scored = f"""
        WITH hidden AS (
            SELECT d.id, d.length FROM memories d
            WHERE d.expires_us IS NOT NULL AND d.deleted_us IS NULL AND d.expires_us <= %(now)s AND {scope.in_scope}
            UNION
            SELECT d.id, d.length FROM memories d
            WHERE d.shadowable AND d.deleted_us IS NULL AND {scope.in_scope} AND NOT ({scope.visible})),
        stats AS MATERIALIZED (
            SELECT ps.n - hc.n AS n, ps.total - hc.total AS total
            FROM (SELECT coalesce(sum(n), 0)::bigint AS n, coalesce(sum(total_len), 0)::bigint AS total
                  FROM part_stats WHERE agent_id = ANY(%(agents)s::text[]) AND level <= %(lvl)s) ps,
                 (SELECT count(*) AS n, coalesce(sum(length), 0)::bigint AS total FROM hidden) hc),
        bm AS MATERIALIZED (
            SELECT n, CASE WHEN total > 0 THEN total::float8 / n::float8 ELSE 1.0::float8 END AS avgdl
            FROM stats WHERE n > 0),
        j AS MATERIALIZED (
            SELECT p.term, p.memory_id AS id, p.tf AS tf, p.length AS len
            FROM postings p
            WHERE p.term = ANY(%(terms)s::text[]) AND p.agent_id = ANY(%(agents)s::text[])
              AND p.level <= %(lvl)s AND p.memory_id NOT IN (SELECT id FROM hidden)),
        f AS (SELECT term, count(*) AS df FROM j GROUP BY term),
        g AS (SELECT j.id, sum({_CONTRIBUTION})::bigint AS s FROM j JOIN f ON f.term = j.term, bm GROUP BY j.id)"""
    # Cut first, then fetch only the surviving rows.
    fetch = f" SELECT top.s, {D_COLUMNS} FROM top JOIN memories d ON d.id = top.id"
    window = limit + ranking.TIE_SLACK
    top = conn.execute(scored + ", top AS (SELECT id, s FROM g ORDER BY s DESC LIMIT %(window)s)" + fetch,
                       {**params, "window": window}).fetchall()
    top.sort(key=lambda r: -r[0])
    if len(top) == window and top[-1][0] == top[limit - 1][0]:
        # Ties run past the slack: take every row tied with the last place.
        top = conn.execute(scored + ", top AS (SELECT id, s FROM g WHERE s >= %(floor)s)" + fetch,
                           {**params, "floor": top[limit - 1][0]}).fetchall()
    order = {agent: i for i, agent in enumerate(scope.agents)}
    hits = [(r[0], row_to_memory(r[1:])) for r in top]
    hits.sort(key=lambda h: (-h[0], h[1].key, order[h[1].agent_id]))
    return [Hit(memory, score / ranking.SCORE_SCALE) for score, memory in hits[:limit]]
