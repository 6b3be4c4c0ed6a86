"""The graph's maintained search statistics equal a count over the visible view, whatever happened."""

from __future__ import annotations

import pytest
from conftest import BACKENDS, fresh_store
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stratamem import Level, NotFound
from stratamem.storage import graph_store
from stratamem.storage.sql import graph_read as q

NAMES = ["n0", "n1", "n2"]
ops = st.lists(
    st.tuples(
        st.sampled_from(["node", "obs", "delete", "unobserve"]),
        st.sampled_from(["a", "b"]),
        st.sampled_from(list(Level)),
        st.sampled_from(NAMES),
        st.sampled_from(["red fox", "blue whale jumps", "fox"]),
    ),
    max_size=25,
)


def brute_force(rows_nodes, rows_obs, agents, lvl):
    best = {}
    for agent, name, level, length in rows_nodes:
        if agent in agents and level <= lvl and ((agent, name) not in best or level > best[(agent, name)][0]):
            best[(agent, name)] = (level, length)
    total = sum(length for _, length in best.values())
    total += sum(length for agent, name, level, length in rows_obs if (agent, name) in best and level <= lvl)
    return len(best), total


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops, st.sampled_from(list(Level)))
@example(
    [
        ("node", "a", Level.PUBLIC, "n0", "fox"),
        ("obs", "a", Level.INTERNAL, "n0", "red fox"),
        ("obs", "a", Level.PUBLIC, "n0", "blue whale jumps"),
        ("node", "a", Level.INTERNAL, "n0", "red fox"),
        ("unobserve", "a", Level.PUBLIC, "n0", "blue whale jumps"),
        ("node", "b", Level.PUBLIC, "n1", "fox"),
        ("obs", "b", Level.CONFIDENTIAL, "n1", "fox"),
        ("delete", "b", Level.PUBLIC, "n1", "fox"),
    ],
    Level.CONFIDENTIAL,
)
def test_partition_counts_minus_flagged_rows_are_exact(backend, tmp_path, steps, taint):
    store = fresh_store(backend, tmp_path)
    try:
        writers = {}
        for kind, agent, level, name, text in steps:
            if (agent, level) not in writers:
                session = store.session(agent)
                session.escalate(level, "write")
                writers[(agent, level)] = session.graph
            g = writers[(agent, level)]
            try:
                if kind == "node":
                    g.capture(name, "t", text)
                elif kind == "obs":
                    g.add_observations([(name, [text])])
                elif kind == "delete":
                    g.delete_nodes([name])
                else:
                    g.delete_observations([(name, [text])])
            except NotFound:
                pass
        observer = store.session("a", peers=("b",))
        observer.escalate(taint, "observe")
        record = observer.record

        def body(gc):
            nodes = gc.rows("SELECT agent_id, name, level, length FROM graph_nodes WHERE deleted_us IS NULL")
            obs = gc.rows(
                "SELECT agent_id, name, level, length FROM graph_observations WHERE deleted_us IS NULL"
            )
            got = q.visible_stats(gc, q.Scope(record))[:2]
            return (got, brute_force(nodes, obs, ("a", "b"), int(taint))), q.AuditDraft("test")

        got, expected = graph_store.operator(store.backend, store.now(), body)
        assert got == expected
    finally:
        store.close()
