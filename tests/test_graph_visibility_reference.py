"""The graph's fast reads against the edge and node rules evaluated in full (issue 12).

``edges_touching`` tests only the endpoint outside the keys it is given (the keys are visible nodes,
so their end is live), and search reads document lengths in the same query as its postings. Both are
checked here, on stores holding every kind of record a session must not see, against the rules
stated once in ``graph_sql.Scope``: every visible edge touching the keys and nothing else, in the same
order; every matching node's length is its visible version's plus its visible observations'.
"""

from __future__ import annotations

import pytest
from conftest import BACKENDS, fresh_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_graph_noninterference import World, scenario

from stratamem import Level
from stratamem.graph.api import _read_draft
from stratamem.storage.sql import graph_read as q


def _visible_nodes(gc: q.GraphConn, scope: q.Scope) -> list[tuple[str, str]]:
    rows = gc.rows(
        f"SELECT n.agent_id, n.name FROM graph_nodes n WHERE {scope.node_visible} ORDER BY n.agent_id, n.name",
        scope.params,
    )
    return [(a, n) for a, n in rows]


def _reference_edges(gc: q.GraphConn, scope: q.Scope, keys: set[tuple[str, str]]) -> list[q.Edge]:
    rows = gc.rows(f"SELECT {q.EDGE_COLUMNS} FROM graph_edges e WHERE {scope.edge_visible}", scope.params)
    touching = [q._edge(r) for r in rows if (r[1], r[2]) in keys or (r[1], r[3]) in keys]
    return q._edge_order(scope, touching)


def _reference_lengths(gc: q.GraphConn, scope: q.Scope) -> dict[tuple[str, str], int]:
    rows = gc.rows(
        f"SELECT n.agent_id, n.name, n.length + coalesce((SELECT sum(o.length) FROM graph_observations o "
        f"WHERE o.agent_id = n.agent_id AND o.name = n.name AND o.level <= :lvl AND o.deleted_us IS NULL), 0) "
        f"FROM graph_nodes n WHERE {scope.node_visible}",
        scope.params,
    )
    return {(a, n): int(length) for a, n, length in rows}


def check(gc: q.GraphConn, scope: q.Scope, subsets: list[list[int]]) -> None:
    visible = _visible_nodes(gc, scope)
    for picks in [list(range(len(visible))), *subsets]:
        keys = [visible[i % len(visible)] for i in picks] if visible else []
        assert q.edges_touching(gc, scope, keys) == _reference_edges(gc, scope, set(keys))
    terms = [t for (t,) in gc.rows("SELECT DISTINCT term FROM graph_postings ORDER BY term")]
    if terms:
        _, _, hidden = q.visible_stats(gc, scope)
        postings, lengths = q.matches(gc, scope, terms, hidden)
        reference = _reference_lengths(gc, scope)
        assert {k: reference.get(k) for k in lengths} == lengths
        assert {(a, n) for _, a, n, _ in postings} == set(lengths)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario(), st.lists(st.lists(st.integers(0, 20), max_size=4), max_size=4))
def test_fast_graph_reads_follow_the_full_rules(backend, tmp_path, data, subsets):
    taint, steps, _ = data
    world = World(backend, tmp_path, taint)
    try:
        for index, (_, op) in enumerate(steps):
            world.apply(op, index)
        graph = world.observer.graph

        def body(gc: q.GraphConn, rec: q.SessionRecord) -> tuple[None, q.AuditDraft]:
            check(gc, q.Scope(rec), subsets)
            return None, _read_draft("graph.test", rec, [], {})

        graph._read(body)
    finally:
        world.store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_edge_whose_far_end_is_gone_touches_nothing(backend, tmp_path):
    """A deletion at PUBLIC leaves the INTERNAL edges of the node (deletes are own-level): they must not
    show from their other, still visible, end — in open_nodes, search_nodes or neighbours."""
    store = fresh_store(backend, tmp_path)
    try:
        low = store.session("a")
        low.graph.capture("n0", "person")
        low.graph.capture("n1", "person")
        high = store.session("a")
        high.escalate(Level.INTERNAL, "test")
        high.graph.relate("n0", "n1", "knows")
        high.graph.relate("n1", "n0", "owns")
        low.graph.delete_nodes(["n0"])
        observer = store.session("a")
        observer.escalate(Level.INTERNAL, "test")
        assert observer.graph.open(["n0", "n1"]) == ([observer.graph.get("n1")], [])
        hits, edges = observer.graph.search_subgraph("person", 10)
        assert [h.node.name for h in hits] == ["n1"] and edges == []
        assert observer.graph.neighbors("n1", 2) == []
    finally:
        store.close()
