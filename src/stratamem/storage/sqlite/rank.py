"""BM25 over one session's visible view on SQLite: the view's SQL, its statistics, exact top-k.

``Scope`` turns a session (agent, peers, live taint) and the time into the SQL
of its visible view and the parameters that go with it. Statistics come from
that view alone — ``part_stats`` and ``term_stats`` over the session's
partitions, the postings tail and the pending decrements added, the few
versions expired or shadowed for this session subtracted — and ranking sums
fixed-point contributions, so nothing in a ranking depends on a record the
session cannot see (``tests/conformance/test_noninterference.py``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from ...labels import visible_params, visible_sql
from ...models import Hit
from ...scope import OWN, Conversations, readable, unreadable
from ...search import ranking
from ..records import SessionRecord
from ..sql import pruning
from ..sql.rows import MEMORY_COLUMNS, memory_rows, row_to_memory
from . import frequency_tail, postings_tail


class Scope:
    """SQL fragments and parameters for one session's visible view.

    The view holds the lattice (agents, level, not deleted, not expired), the
    conversation scope (``stratamem.scope``: ``conversations``) and shadowing
    by a higher version that is itself in the view — a version the session
    cannot read shadows nothing.
    """

    def __init__(self, record: SessionRecord, now_us: int, conversations: Conversations = OWN) -> None:
        self.record = record
        self.agents = record.agents
        self.conversations = conversations
        self.params: dict[str, object] = {
            **visible_params(record.taint_code),
            "now": now_us,
            "csid": record.id,
        }
        names = []
        for i, agent in enumerate(self.agents):
            self.params[f"a{i}"] = agent
            names.append(f":a{i}")
        self.agent_list = ", ".join(names)
        self.rank = (
            "CASE d.agent_id " + " ".join(f"WHEN :a{i} THEN {i}" for i in range(len(self.agents))) + " END"
        )
        self.readable = readable(conversations, "d", ":csid")
        self.visible = f"""
            d.agent_id IN ({self.agent_list}) AND {visible_sql("d.level")} AND d.deleted_us IS NULL
            AND (d.expires_us IS NULL OR d.expires_us > :now) AND {self.readable}
            AND (d.shadowable = 0 OR NOT EXISTS (
                SELECT 1 FROM memories h
                WHERE h.agent_id = d.agent_id AND h.key = d.key AND h.level > d.level
                  AND {visible_sql("h.level")} AND h.deleted_us IS NULL
                  AND (h.expires_us IS NULL OR h.expires_us > :now)
                  AND {readable(conversations, "h", ":csid")}))"""
        # the conversation memories the rule hides in the session's partitions (None: it hides none)
        hides = unreadable(conversations, "d", ":csid")
        self.unreadable = None if hides is None else f"{hides} AND d.deleted_us IS NULL"


def recent(conn: sqlite3.Connection, scope: Scope, limit: int) -> list[Hit]:
    """The visible view's most recently updated memories (a search with no terms)."""
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS.replace('id,', 'd.id,', 1)} FROM memories d WHERE {scope.visible} "
        f"ORDER BY d.updated_us DESC, d.key, {scope.rank} LIMIT :limit",
        {**scope.params, "limit": limit},
    ).fetchall()
    return [Hit(row_to_memory(r), 0.0) for r in rows]


def visible_stats(conn: sqlite3.Connection, scope: Scope) -> tuple[int, int, list[int]]:
    """Document count and total length over exactly the session's visible view.

    ``part_stats`` counts every live version in the session's partitions;
    those that are expired or shadowed for this session, or conversation
    memories its conversation scope hides, are found through three partial
    indexes, subtracted, and returned so ranking can skip them.
    """
    n, total = conn.execute(
        f"SELECT coalesce(sum(n), 0), coalesce(sum(total_len), 0) FROM part_stats "
        f"WHERE agent_id IN ({scope.agent_list}) AND {visible_sql('level')}",
        scope.params,
    ).fetchone()
    in_scope = f"d.agent_id IN ({scope.agent_list}) AND {visible_sql('d.level')} AND d.deleted_us IS NULL"
    hidden = conn.execute(
        f"""SELECT d.id, d.length FROM memories d
            WHERE d.expires_us IS NOT NULL AND d.deleted_us IS NULL AND d.expires_us <= :now AND +{in_scope}
            UNION
            SELECT d.id, d.length FROM memories d
            WHERE d.shadowable = 1 AND d.deleted_us IS NULL AND {in_scope} AND NOT ({scope.visible})"""
        + (
            ""
            if scope.unreadable is None
            else f" UNION SELECT d.id, d.length FROM memories d WHERE {scope.unreadable} AND {in_scope}"
        ),
        scope.params,
    ).fetchall()
    return n - len(hidden), total - sum(length for _, length in hidden), [mem_id for mem_id, _ in hidden]


def ranked(
    conn: sqlite3.Connection,
    scope: Scope,
    terms: Sequence[str],
    limit: int,
    weights: Mapping[str, float] | None = None,
) -> list[Hit]:
    """Exact BM25 top-k over the visible view (``ranked_rows``), as hits."""
    rows = ranked_rows(conn, scope, terms, limit, weights=weights)
    return [Hit(row_to_memory(row), score) for row, score in rows]


def ranked_rows(
    conn: sqlite3.Connection,
    scope: Scope,
    terms: Sequence[str],
    limit: int,
    stats: tuple[int, int, list[int]] | None = None,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[Any, float]]:
    """Exact BM25 top-k over the visible view: (memory row, score), best first.

    Document frequencies are counted over visible postings only; which
    postings are scored (exhaustive or MaxScore-pruned, always with the
    exhaustive answer) is decided by ``pruning.top_scores``, shared with
    the PostgreSQL backend. Contributions are summed as
    fixed-point integers (order-independent) and ties are broken by key
    and agent order, never row ids: two stores that differ only by
    invisible records return bit-identical results. ``stats``: the view's
    ``visible_stats`` when the caller already read them in this transaction;
    ``weights``: the query's term weights (``SearchRequest.weights``).
    """
    n_docs, total_len, hidden = stats if stats is not None else visible_stats(conn, scope)
    if n_docs <= 0:
        return []
    filters = f"p.agent_id IN ({scope.agent_list}) AND {visible_sql('p.level')}"
    if hidden:
        filters += " AND p.memory_id NOT IN (SELECT value FROM json_each(:hidden))"
    freqs = visible_doc_freqs(conn, scope, terms, hidden)
    term_weights, order = pruning.weigh(n_docs, freqs, weights)
    if not term_weights:
        return []
    params: dict[str, object] = {
        **scope.params,
        "hidden": json.dumps(hidden),
        "avgdl": total_len / n_docs if total_len > 0 else 1.0,
        "scale": ranking.SCORE_SCALE,
        "k1": ranking.K1,
        "k1p": ranking.K1 + 1.0,
        "b": ranking.B,
        "omb": 1.0 - ranking.B,
    }
    for i, term in enumerate(order):
        params[f"t{i}"], params[f"w{i}"] = term, term_weights[term]
    weight = "CASE p.term " + " ".join(f"WHEN :t{i} THEN :w{i}" for i in range(len(order))) + " END"
    contribution = (
        f"CAST({weight} * p.tf * :k1p / (p.tf + :k1 * (:omb + :b * p.length / :avgdl)) * :scale AS INTEGER)"
    )
    all_terms = ", ".join(f":t{i}" for i in range(len(order)))

    # postings and the single writes' tail scored alike (postings_tail.union): integers summed per memory
    scored = f"SELECT p.memory_id AS id, {contribution} AS s"

    def run(essential: int, window: int | None, floor: int | None) -> list[Any]:
        if essential >= len(order):
            head = (
                f"WITH g AS (SELECT id, sum(s) AS s FROM "
                f"({postings_tail.union(scored, f'p.term IN ({all_terms}) AND {filters}')}) GROUP BY id) "
            )
        else:
            some = ", ".join(f":t{i}" for i in range(essential))
            candidates = postings_tail.union("SELECT p.memory_id AS id", f"p.term IN ({some}) AND {filters}")
            in_c = f"p.term IN ({all_terms}) AND p.memory_id IN (SELECT id FROM c)"
            head = (
                f"WITH c AS (SELECT DISTINCT id FROM ({candidates})), "
                f"g AS (SELECT id, sum(s) AS s FROM ({postings_tail.union(scored, in_c)}) GROUP BY id) "
            )
        if floor is None:
            return conn.execute(
                head + "SELECT id, s FROM g ORDER BY s DESC LIMIT :window", {**params, "window": window}
            ).fetchall()
        return conn.execute(
            head + "SELECT id, s FROM g WHERE s >= :floor", {**params, "floor": floor}
        ).fetchall()

    ranked = pruning.top_scores(order, freqs, term_weights, limit, run)
    if not ranked:
        return []
    by_id = {r[0]: r for r in memory_rows(conn, [r[0] for r in ranked])}
    agent_rank = {agent: i for i, agent in enumerate(scope.agents)}
    ranked.sort(key=lambda r: (-r[1], by_id[r[0]][2], agent_rank[by_id[r[0]][1]]))
    return [(by_id[mem_id], score / ranking.SCORE_SCALE) for mem_id, score in ranked[:limit]]


def visible_doc_freqs(
    conn: sqlite3.Connection, scope: Scope, terms: Sequence[str], hidden: list[int]
) -> dict[str, int]:
    """Per-term document frequency over the visible view: partition counts minus hidden versions."""
    term_params = {f"t{i}": term for i, term in enumerate(terms)}
    term_list = ", ".join(f":t{i}" for i in range(len(terms)))
    freqs = dict.fromkeys(terms, 0)
    for term, df in conn.execute(
        f"SELECT term, sum(df) FROM ({postings_tail.doc_freqs(term_list, scope.agent_list)}) GROUP BY term",
        {**scope.params, **term_params},
    ):
        freqs[term] = df
    frequency_tail.add_pending(conn, freqs, scope.agent_list, scope.params)
    if hidden:
        held = f"p.term IN ({term_list}) AND p.memory_id IN (SELECT value FROM json_each(:hidden))"
        for term, df in conn.execute(
            f"SELECT term, count(*) FROM ({postings_tail.union('SELECT p.term AS term', held)}) GROUP BY term",
            {**term_params, "hidden": json.dumps(hidden)},
        ):
            freqs[term] -= df
    return freqs
