"""CONTRACT §5 noninterference, as a property.

Two stores receive the same visible history; one of them also receives
records the observing session must not see (above its taint, of an agent
outside its own and peers, soft-deleted, expired). Every read the observer
makes must come out identical — results, order, scores, counts and errors.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem import Level, NotFound
from conftest import BACKENDS, fresh_store

WORDS = ["apple", "banana", "river", "running", "runs", "blue", "meeting", "friday", "tea", "coffee"]
KEYS = ["k0", "k1", "k2", "k3"]
HIDDEN_KEYS = ["h0", "h1", "h2"]
TAGS = ["t0", "t1"]
OWN, PEER, OUTSIDER = "a", "b", "c"

content = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
tags = st.lists(st.sampled_from(TAGS), max_size=2, unique=True)
level = st.sampled_from(list(Level))


def visible_op(taint: Level):
    lv = st.sampled_from([lv for lv in Level if lv <= taint])
    agent = st.sampled_from([OWN, PEER])
    return st.one_of(
        st.tuples(st.just("save"), agent, lv, st.sampled_from(KEYS), content, tags),
        st.tuples(st.just("delete"), agent, lv, st.sampled_from(KEYS)),
    )


def hidden_op(taint: Level):
    above = [lv for lv in Level if lv > taint]
    choices = [
        st.tuples(st.just("save"), st.just(OUTSIDER), level, st.sampled_from(KEYS + HIDDEN_KEYS), content, tags),
        st.tuples(st.just("save_delete"), st.sampled_from([OWN, PEER, OUTSIDER]), level,
                  st.sampled_from(HIDDEN_KEYS), content, tags),
        st.tuples(st.just("save_expired"), st.sampled_from([OWN, PEER]), level,
                  st.sampled_from(HIDDEN_KEYS), content, tags),
    ]
    if above:
        choices.append(st.tuples(st.just("save"), st.sampled_from([OWN, PEER]), st.sampled_from(above),
                                 st.sampled_from(KEYS + HIDDEN_KEYS), content, tags))
        choices.append(st.tuples(st.just("delete"), st.sampled_from([OWN, PEER]), st.sampled_from(above),
                                 st.sampled_from(KEYS)))
    return st.one_of(*choices)


@st.composite
def scenario(draw):
    taint = draw(level)
    steps = draw(st.lists(st.one_of(
        st.tuples(st.just("visible"), visible_op(taint)),
        st.tuples(st.just("hidden"), hidden_op(taint)),
    ), max_size=25))
    queries = draw(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
                            min_size=1, max_size=3))
    return taint, steps, queries


class World:
    def __init__(self, store, taint: Level) -> None:
        self.store = store
        self.writers = {}
        self.observer = store.session(OWN, peers=(PEER,))
        self.observer.escalate(taint, "observe")

    def writer(self, agent: str, lv: Level):
        if (agent, lv) not in self.writers:
            session = self.store.session(agent)
            session.escalate(lv, "write")
            self.writers[(agent, lv)] = session
        return self.writers[(agent, lv)]

    def apply(self, op) -> None:
        kind, agent, lv, key, *rest = op
        w = self.writer(agent, lv)
        if kind == "delete":
            try:
                w.delete(key)
            except NotFound:
                pass
        elif kind == "save":
            w.save(key, rest[0], tags=rest[1])
        elif kind == "save_delete":
            w.save(key, rest[0], tags=rest[1])
            w.delete(key)
        elif kind == "save_expired":
            try:
                w.delete(key)  # leave no live hidden version behind
            except NotFound:
                pass
            w.save(key, rest[0], tags=rest[1], ttl=0.0001)

    def observe(self, queries) -> list:
        o = self.observer

        def mem(m):
            return None if m is None else (m.agent_id, m.key, m.level, m.content, m.tags, m.category)

        out = [("get", k, mem(o.get(k))) for k in KEYS + HIDDEN_KEYS]
        out.append(("list", [mem(m) for m in o.list()]))
        out += [("list", t, [mem(m) for m in o.list(tag=t)]) for t in TAGS]
        for q in [*queries, "", "*"]:
            for n in (1, 3, 100):
                out.append(("search", q, n, [(mem(h.memory), h.score) for h in o.search(q, max_results=n)]))
        for k in KEYS + HIDDEN_KEYS:
            try:
                o.delete("missing-" + k)
            except NotFound as exc:
                out.append(("delete-error", exc.code, exc.message))
        return out


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario())
def test_invisible_records_change_nothing_observable(backend, tmp_path, data):
    assert_noninterference(backend, tmp_path, data)


def assert_noninterference(backend, tmp_path, data) -> None:
    """Replay a scenario into two stores (with and without hidden records) and compare every read."""
    taint, steps, queries = data
    plain = World(fresh_store(backend, tmp_path), taint)
    noisy = World(fresh_store(backend, tmp_path), taint)
    try:
        for where, op in steps:
            noisy.apply(op)
            if where == "visible":
                plain.apply(op)
        assert plain.observe(queries) == noisy.observe(queries)
    finally:
        plain.store.close()
        noisy.store.close()


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from([OWN, PEER, OUTSIDER]), level, st.sampled_from(KEYS), content,
                          st.booleans()), max_size=30), level)
def test_nothing_above_taint_or_outside_agents_is_ever_returned(backend, tmp_path, ops, taint):
    store = fresh_store(backend, tmp_path)
    try:
        world = World(store, taint)
        for agent, lv, key, text, delete in ops:
            world.apply(("save", agent, lv, key, text, []))
            if delete:
                world.apply(("delete", agent, lv, key))
        o = world.observer
        seen = [o.get(k) for k in KEYS] + o.list() + [h.memory for q in WORDS + [""] for h in o.search(q, 100)]
        for m in filter(None, seen):
            assert m.level <= taint and m.agent_id in (OWN, PEER)
        # Shadowing: one version per (agent, key), the highest visible one.
        listed = o.list()
        assert len({(m.agent_id, m.key) for m in listed}) == len(listed)
        for m in listed:
            if m.agent_id == OWN:
                assert o.get(m.key) == m
    finally:
        store.close()
