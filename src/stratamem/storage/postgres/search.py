"""A session's visible view and BM25 ranking over it, in PostgreSQL.

A port of the SQLite backend's design (see ``sqlite_rank.Scope`` and
``sqlite_rank.ranked``): statistics come from ``part_stats`` and
``term_stats`` over the session's partitions minus the versions hidden from it
(expired or shadowed), weights from ``ranking.idf`` in Python, the choice of
exhaustive or pruned scoring from ``pruning``, each contribution is truncated
to a fixed-point integer before summing, and ties are ordered by key then
agent. The float expression is written operation for operation as SQLite
evaluates it (double precision throughout, truncation toward zero), so both
backends return the same keys, order and scores for the same store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import psycopg

from ... import paging
from ...labels import visible_params, visible_sql
from ...models import Hit, Memory
from ...paging import ListQuery, Page
from ...scope import OWN, Conversations, readable, unreadable
from ...search import ranking
from ..records import SessionRecord
from ..sql import listing as list_sql
from ..sql import pruning
from ..sql.dialect import POSTGRES
from ..sql.rows import one_row
from .rows import MEMORY_COLUMNS, row_to_memory

D_COLUMNS = ", ".join("d." + c for c in MEMORY_COLUMNS.split(", "))

# Written operation for operation as SQLite evaluates the same expression (see
# sqlite_rank.ranked): double precision throughout, the weight computed in
# Python, and truncation toward zero (SQLite's CAST AS INTEGER) before the
# integer sum — PostgreSQL's float8-to-bigint cast would round instead.
_CONTRIBUTION = (
    "trunc(q.w * p.tf::float8 * %(k1p)s::float8"
    " / (p.tf::float8 + %(k1)s::float8 * (%(omb)s::float8 + %(b)s::float8 * p.length::float8 / %(avgdl)s::float8))"
    " * %(scale)s::float8)::bigint"
)


def visible(column: str) -> str:
    """SQL true iff the label in ``column`` is <= the session's taint (``Scope.params`` binds its parts)."""
    return visible_sql(column, "%(top)s", "%(deny)s", "%(lvl)s")


class Scope:
    """SQL fragments and parameters for one session's visible view (rows aliased ``d``).

    As ``sqlite_rank.Scope``: the label order (``stratamem.labels``), the conversation scope
    (``stratamem.scope``) and shadowing by a higher version in the view only.
    """

    def __init__(self, record: SessionRecord, now_us: int, conversations: Conversations = OWN) -> None:
        self.record = record
        self.agents = list(record.agents)
        self.params: dict[str, object] = {
            **visible_params(record.taint_code),
            "now": now_us,
            "agents": self.agents,
            "csid": record.id,
        }
        self.in_scope = (
            f"d.agent_id = ANY(%(agents)s::text[]) AND {visible('d.level')} AND d.deleted_us IS NULL"
        )
        self.readable = readable(conversations, "d", "%(csid)s")
        self.visible = f"""{self.in_scope}
            AND (d.expires_us IS NULL OR d.expires_us > %(now)s) AND {self.readable}
            AND (NOT d.shadowable OR NOT EXISTS (
                SELECT 1 FROM memories h
                WHERE h.agent_id = d.agent_id AND h.key = d.key AND h.level > d.level
                  AND {visible("h.level")} AND h.deleted_us IS NULL
                  AND (h.expires_us IS NULL OR h.expires_us > %(now)s)
                  AND {readable(conversations, "h", "%(csid)s")}))"""
        # the conversation memories the rule hides in the session's partitions (None: it hides none)
        hides = unreadable(conversations, "d", "%(csid)s")
        self.unreadable = None if hides is None else f"{hides} AND d.deleted_us IS NULL"
        self.rank = "array_position(%(agents)s::text[], d.agent_id)"


def get(conn: psycopg.Connection, scope: Scope, key: str) -> Memory | None:
    """The highest visible version of ``key``: own agent first, then peers in order."""
    row = conn.execute(
        f"SELECT {D_COLUMNS} FROM memories d WHERE d.key = %(key)s AND {scope.in_scope} AND {scope.readable} "
        f"AND (d.expires_us IS NULL OR d.expires_us > %(now)s) ORDER BY {scope.rank}, d.level DESC LIMIT 1",
        {**scope.params, "key": key},
    ).fetchone()
    return row_to_memory(row) if row else None


def listing(conn: psycopg.Connection, scope: Scope, query: ListQuery) -> Page:
    """One page of the visible view (filters, cursor and LIMIT in SQL; see ``storage.listing``)."""
    sql, extra = list_sql.listing_sql(POSTGRES, query, tuple(scope.agents), scope.visible)
    rows = conn.execute(sql, {**scope.params, **extra}).fetchall()
    return paging.paged([row_to_memory(r) for r in rows], query.limit)


def recent(conn: psycopg.Connection, scope: Scope, limit: int) -> list[Hit]:
    rows = conn.execute(
        f"SELECT {D_COLUMNS} FROM memories d WHERE {scope.visible} "
        f"ORDER BY d.updated_us DESC, d.key, {scope.rank} LIMIT %(limit)s",
        {**scope.params, "limit": limit},
    ).fetchall()
    return [Hit(row_to_memory(r), 0.0) for r in rows]


def ranked(
    conn: psycopg.Connection,
    scope: Scope,
    terms: Sequence[str],
    limit: int,
    weights: Mapping[str, float] | None = None,
) -> list[Hit]:
    """Exact BM25 top-k over the visible view, as ``sqlite_rank.ranked`` computes it.

    One statement gathers the view's statistics: ``hidden`` (live versions in
    the session's partitions that it cannot see: expired, shadowed by a
    higher visible version, or conversation memories its scope hides), document count and total length from
    ``part_stats`` minus the hidden versions, and each term's document
    frequency from ``term_stats`` minus its hidden postings. Weights are
    computed in Python (``ranking.idf``, as on SQLite) and passed in, and
    ``pruning.top_scores`` decides which postings are scored — exhaustive or
    MaxScore-pruned, with the same answer either way. All statements run in
    the reader's REPEATABLE READ snapshot.
    """
    unique = list(dict.fromkeys(terms))
    params = {**scope.params, "terms": unique}
    hidden_conversations = (
        ""
        if scope.unreadable is None
        else f"\n            UNION\n            SELECT d.id, d.length FROM memories d WHERE {scope.unreadable} AND {scope.in_scope}"
    )
    n_docs, total_len, hidden, found, counts = one_row(
        conn.execute(
            f"""
        WITH hidden AS MATERIALIZED (
            SELECT d.id, d.length FROM memories d
            WHERE d.expires_us IS NOT NULL AND d.deleted_us IS NULL AND d.expires_us <= %(now)s AND {scope.in_scope}
            UNION
            SELECT d.id, d.length FROM memories d
            WHERE d.shadowable AND d.deleted_us IS NULL AND {scope.in_scope} AND NOT ({scope.visible}){hidden_conversations}),
        ps AS (SELECT coalesce(sum(n), 0)::bigint AS n, coalesce(sum(total_len), 0)::bigint AS total
               FROM part_stats WHERE agent_id = ANY(%(agents)s::text[]) AND {visible("level")}),
        hc AS (SELECT count(*)::bigint AS n, coalesce(sum(length), 0)::bigint AS total,
                      coalesce(array_agg(id), '{{}}')::bigint[] AS ids FROM hidden),
        ts AS (SELECT term, sum(df)::bigint AS df FROM term_stats
               WHERE term = ANY(%(terms)s::text[]) AND agent_id = ANY(%(agents)s::text[]) AND {visible("level")}
               GROUP BY term),
        hp AS (SELECT p.term, count(*)::bigint AS df FROM postings p
               WHERE p.term = ANY(%(terms)s::text[]) AND p.agent_id = ANY(%(agents)s::text[])
                 AND {visible("p.level")} AND p.memory_id IN (SELECT id FROM hidden)
               GROUP BY p.term),
        f AS (SELECT ts.term, ts.df - coalesce(hp.df, 0) AS df FROM ts LEFT JOIN hp ON hp.term = ts.term)
        SELECT ps.n - hc.n, ps.total - hc.total, hc.ids,
               (SELECT coalesce(array_agg(term), '{{}}') FROM f), (SELECT coalesce(array_agg(df), '{{}}') FROM f)
        FROM ps, hc""",
            params,
        ).fetchone()
    )
    if n_docs <= 0:
        return []
    freqs = dict.fromkeys(unique, 0)
    freqs.update(zip(found, counts, strict=True))
    term_weights, order = pruning.weigh(n_docs, freqs, weights)
    if not term_weights:
        return []
    params = {
        **scope.params,
        "hidden": hidden,
        "order": order,
        "weights": [term_weights[t] for t in order],
        "avgdl": total_len / n_docs if total_len > 0 else 1.0,
        "scale": float(ranking.SCORE_SCALE),
        "k1": ranking.K1,
        "k1p": ranking.K1 + 1.0,
        "b": ranking.B,
        "omb": 1.0 - ranking.B,
    }
    filters = f"p.agent_id = ANY(%(agents)s::text[]) AND {visible('p.level')}"
    if hidden:
        filters += " AND NOT (p.memory_id = ANY(%(hidden)s::bigint[]))"
    weighted = "JOIN unnest(%(order)s::text[], %(weights)s::float8[]) AS q(term, w) ON q.term = p.term"

    def run(essential: int, window: int | None, floor: int | None) -> list[tuple[int, int]]:
        if essential >= len(order):
            head = (
                f"WITH g AS (SELECT p.memory_id AS id, sum({_CONTRIBUTION})::bigint AS s FROM postings p {weighted} "
                f"WHERE p.term = ANY(%(order)s::text[]) AND {filters} GROUP BY p.memory_id) "
            )
        else:
            # Candidates hold one of the rarest terms; each is then scored over
            # every query term through the postings key (term, agent, level, id).
            head = (
                f"WITH c AS MATERIALIZED (SELECT DISTINCT p.memory_id AS id, p.agent_id, p.level FROM postings p "
                f"WHERE p.term = ANY(%(some)s::text[]) AND {filters}), "
                f"g AS (SELECT p.memory_id AS id, sum({_CONTRIBUTION})::bigint AS s "
                f"FROM c JOIN postings p ON p.memory_id = c.id AND p.agent_id = c.agent_id AND p.level = c.level "
                f"AND p.term = ANY(%(order)s::text[]) {weighted} GROUP BY p.memory_id) "
            )
        run_params = {**params, "some": list(order[:essential])}
        if floor is None:
            rows = conn.execute(
                head + "SELECT id, s FROM g ORDER BY s DESC LIMIT %(window)s",
                {**run_params, "window": window},
            ).fetchall()
        else:
            rows = conn.execute(
                head + "SELECT id, s FROM g WHERE s >= %(floor)s", {**run_params, "floor": floor}
            ).fetchall()
        return [(r[0], int(r[1])) for r in rows]

    top = pruning.top_scores(order, freqs, term_weights, limit, run)
    if not top:
        return []
    scores = dict(top)
    rows = conn.execute(
        f"SELECT {D_COLUMNS} FROM memories d WHERE d.id = ANY(%s::bigint[])", (list(scores),)
    ).fetchall()
    order_of = {agent: i for i, agent in enumerate(scope.agents)}
    hits = [(scores[r[0]], row_to_memory(r)) for r in rows]
    hits.sort(key=lambda h: (-h[0], h[1].key, order_of[h[1].agent_id]))
    return [Hit(memory, score / ranking.SCORE_SCALE) for score, memory in hits[:limit]]
