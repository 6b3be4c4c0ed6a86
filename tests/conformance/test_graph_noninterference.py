"""Noninterference for the knowledge graph, as a property (issue 12, item 3).

Two stores receive the same visible graph history; one also receives graph
records the observer must not see: written by an agent outside its own and
peers, written above its taint (new nodes, higher versions of visible nodes,
observations and edges on visible nodes), or written and then soft-deleted.
Every graph read — nodes, search results and scores, neighbours, degrees,
paths, stats, pages, suggestions and errors — must come out identical.
"""

from __future__ import annotations

import pytest
from conftest import BACKENDS, fresh_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_noninterference import assert_noninterference

from stratamem import Level, NotFound
from stratamem.graph import EdgeDraft

WORDS = ["apple", "river", "running", "blue", "meeting", "tea"]
NAMES = ["n0", "n1", "n2", "n3"]
HIDDEN_NAMES = ["h0", "h1"]
RELATIONS = ["knows", "owns"]
TYPES = ["person", "team"]
OWN, PEER, OUTSIDER = "a", "b", "c"

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
level = st.sampled_from(list(Level))


def _ops(agent, lv, names):
    return st.one_of(
        st.tuples(st.just("node"), agent, lv, names, st.sampled_from(TYPES), text),
        st.tuples(st.just("obs"), agent, lv, names, text),
        st.tuples(st.just("edge"), agent, lv, names, names, st.sampled_from(RELATIONS)),
        st.tuples(st.just("del_node"), agent, lv, names),
        st.tuples(st.just("del_edge"), agent, lv, names, names, st.sampled_from(RELATIONS)),
        st.tuples(st.just("del_obs"), agent, lv, names, text),
    )


def visible_op(taint: Level):
    return _ops(
        st.sampled_from([OWN, PEER]),
        st.sampled_from([lv for lv in Level if lv <= taint]),
        st.sampled_from(NAMES),
    )


def hidden_op(taint: Level):
    every = st.sampled_from(NAMES + HIDDEN_NAMES)
    choices = [
        _ops(st.just(OUTSIDER), level, every),
        # written, then soft-deleted: a hidden name, a text and a relation no visible op uses
        st.tuples(
            st.just("node_deleted"), st.sampled_from([OWN, PEER]), level, st.sampled_from(HIDDEN_NAMES), text
        ),
        st.tuples(st.just("obs_deleted"), st.sampled_from([OWN, PEER]), level, st.sampled_from(NAMES), text),
        st.tuples(
            st.just("edge_deleted"),
            st.sampled_from([OWN, PEER]),
            level,
            st.sampled_from(NAMES),
            st.sampled_from(NAMES),
        ),
    ]
    above = [lv for lv in Level if lv > taint]
    if above:
        choices.append(_ops(st.sampled_from([OWN, PEER]), st.sampled_from(above), every))
    return st.one_of(*choices)


@st.composite
def scenario(draw):
    taint = draw(level)
    steps = draw(
        st.lists(
            st.one_of(
                st.tuples(st.just("visible"), visible_op(taint)),
                st.tuples(st.just("hidden"), hidden_op(taint)),
            ),
            max_size=30,
        )
    )
    queries = draw(st.lists(text, min_size=1, max_size=2))
    return taint, steps, queries


def node_view(n):
    return (
        None
        if n is None
        else (
            n.agent_id,
            n.name,
            n.type,
            n.content,
            n.tags,
            n.level,
            tuple((o.text, o.level) for o in n.observations),
        )
    )


def edge_view(e):
    return (e.agent_id, e.source, e.target, e.relation, e.note, e.level)


def attempt(call):
    """A read's answer, or its error code and message (errors must be identical too)."""
    try:
        return ("ok", call())
    except NotFound as exc:
        return ("error", exc.code, exc.message)


class World:
    def __init__(self, backend: str, tmp_path, taint: Level) -> None:
        self.store = fresh_store(backend, tmp_path)
        self.writers: dict = {}
        self.observer = self.store.session(OWN, peers=(PEER,))
        self.observer.escalate(taint, "observe")

    def writer(self, agent, lv):
        if (agent, lv) not in self.writers:
            session = self.store.session(agent)
            session.escalate(lv, "write")
            self.writers[(agent, lv)] = session.graph
        return self.writers[(agent, lv)]

    def at_step(self, index: int) -> None:
        """Graph reads show no times, so the two stores' clocks need not agree."""

    def apply(self, op, index: int = 0) -> None:
        kind, agent, lv, name, *rest = op
        g = self.writer(agent, lv)
        try:
            if kind == "node":
                g.capture(name, rest[0], rest[1])
            elif kind == "obs":
                g.add_observations([(name, [rest[0]])])
            elif kind == "edge":
                g.relate(name, rest[0], rest[1], note=f"{name}-{rest[0]}")
            elif kind == "del_node":
                g.delete_nodes([name])
            elif kind == "del_edge":
                g.delete_edges([EdgeDraft(name, rest[0], rest[1])])
            elif kind == "del_obs":
                g.delete_observations([(name, [rest[0]])])
            elif kind == "node_deleted":
                g.capture(name, "secret", rest[0], observations=["zzhidden " + rest[0]])
                g.delete_nodes([name])
            elif kind == "obs_deleted":
                g.add_observations([(name, ["zzhidden " + rest[0]])])
                g.delete_observations([(name, ["zzhidden " + rest[0]])])
            elif kind == "edge_deleted":
                g.relate(name, rest[0], "zzhidden")
                g.delete_edges([EdgeDraft(name, rest[0], "zzhidden")])
        except NotFound:
            pass

    def observe(self, queries) -> list:
        g = self.observer.graph
        everyone = NAMES + HIDDEN_NAMES
        out: list = [("get", n, node_view(g.get(n))) for n in everyone]
        nodes, edges = g.open(everyone)
        out.append(("open", [node_view(n) for n in nodes], [edge_view(e) for e in edges]))
        for q in [*queries, "zzhidden secret", ""]:
            for limit in (1, 3, 100):
                out.append(("search", q, limit, [(node_view(h.node), h.score) for h in g.search(q, limit)]))
        for n in everyone:
            for depth in (1, 2, 3):
                out.append(
                    (
                        "neighbors",
                        n,
                        depth,
                        attempt(
                            lambda n=n, depth=depth: [
                                (node_view(x.node), x.distance, edge_view(x.edge))
                                for x in g.neighbors(n, depth, 100)
                            ]
                        ),
                    )
                )
            out.append(("degree", n, attempt(lambda n=n: g.degree(n))))
            out.append(
                (
                    "suggest",
                    n,
                    attempt(
                        lambda n=n: [
                            (node_view(s.node), s.shared_neighbors, s.score) for s in g.suggest(n, 100)
                        ]
                    ),
                )
            )
            for m in everyone:
                out.append(
                    ("path", n, m, attempt(lambda n=n, m=m: [edge_view(e) for e in g.path(n, m) or []]))
                )
        out.append(("stats", g.stats()))
        cursor, pages = None, []
        for _ in range(10):
            page = g.read(cursor, limit=2)
            pages.append(
                ([node_view(n) for n in page.nodes], [edge_view(e) for e in page.edges], page.truncated)
            )
            cursor = page.cursor
            if cursor is None:
                break
        out.append(("pages", pages))
        return out


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario())
def test_invisible_graph_records_change_nothing_observable(backend, tmp_path, data):
    assert_noninterference(backend, tmp_path, data, world=World)
