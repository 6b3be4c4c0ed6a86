"""CONTRACT §5 noninterference, as a property.

Two stores receive the same visible history; one of them also receives
records the observing session must not see (above its taint, of an agent
outside its own and peers, soft-deleted, expired). Every read the observer
makes must come out identical — results, order, scores, counts, errors and
the records' times and lineage (each step runs at the same clock reading in
both stores, so a record's ``created_at`` depends only on the visible history).

Soft-deleted and expired records also land on the keys the visible history
uses (same agent, same and other levels), whenever that slot holds no live
version: a later visible save there must then create a fresh record, exactly as
if the hidden one had never existed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import BACKENDS, FakeClock, fresh_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem import Level, NotFound

WORDS = ["apple", "banana", "river", "running", "runs", "blue", "meeting", "friday", "tea", "coffee"]
KEYS = ["k0", "k1", "k2", "k3"]
HIDDEN_KEYS = ["h0", "h1", "h2"]
TAGS = ["t0", "t1"]
OWN, PEER, OUTSIDER = "a", "b", "c"

content = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
tags = st.lists(st.sampled_from(TAGS), max_size=2, unique=True)
level = st.sampled_from(list(Level))
# When a saved memory happened (days before 2000-01-01; None: the save's time) and the text that situates it
# (None: none). Hidden records carry them too: neither may show through any read, filter or score.
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
OCCURRED_BOUNDS = (EPOCH - timedelta(days=3), EPOCH - timedelta(days=1))
occurred = st.one_of(st.none(), st.integers(0, 4))
situation = st.one_of(st.none(), content)


def saved(kind: str, agent, lv, key):
    """A save step: (kind, agent, level, key, content, tags, occurred day or None, context or None)."""
    return st.tuples(st.just(kind), agent, lv, key, content, tags, occurred, situation)


def visible_op(taint: Level):
    lv = st.sampled_from([lv for lv in Level if lv <= taint])
    agent = st.sampled_from([OWN, PEER])
    return st.one_of(
        saved("save", agent, lv, st.sampled_from(KEYS)),
        st.tuples(st.just("delete"), agent, lv, st.sampled_from(KEYS)),
    )


def hidden_op(taint: Level):
    above = [lv for lv in Level if lv > taint]
    seen = st.sampled_from([lv for lv in Level if lv <= taint])
    choices = [
        # Gone records on the very slots the visible history writes (same agent, key and level).
        st.one_of(
            saved("save_expired", st.sampled_from([OWN, PEER]), seen, st.sampled_from(KEYS)),
            saved("save_delete", st.sampled_from([OWN, PEER]), seen, st.sampled_from(KEYS)),
        ),
        saved("save", st.just(OUTSIDER), level, st.sampled_from(KEYS + HIDDEN_KEYS)),
        saved(
            "save_delete", st.sampled_from([OWN, PEER, OUTSIDER]), level, st.sampled_from(KEYS + HIDDEN_KEYS)
        ),
        saved("save_expired", st.sampled_from([OWN, PEER]), level, st.sampled_from(KEYS + HIDDEN_KEYS)),
    ]
    if above:
        choices.append(
            saved(
                "save",
                st.sampled_from([OWN, PEER]),
                st.sampled_from(above),
                st.sampled_from(KEYS + HIDDEN_KEYS),
            )
        )
        choices.append(
            st.tuples(
                st.just("delete"), st.sampled_from([OWN, PEER]), st.sampled_from(above), st.sampled_from(KEYS)
            )
        )
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
            max_size=25,
        )
    )
    queries = draw(
        st.lists(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join), min_size=1, max_size=3
        )
    )
    return taint, steps, queries


STEP = timedelta(seconds=1)


class World:
    def __init__(self, backend: str, tmp_path, taint: Level, **options) -> None:
        self.clock = FakeClock()
        self.start = self.clock.now
        self.store = fresh_store(backend, tmp_path, clock=self.clock, **options)
        self.taint = taint
        self.writers = {}
        self.live: set[tuple[str, Level, str]] = set()  # visible slots holding a live version
        self.observer = self.store.session(OWN, peers=(PEER,))
        self.observer.escalate(taint, "observe")

    def at_step(self, index: int) -> None:
        """Set the clock to the step's own time: the same in both stores, whatever else they hold."""
        self.clock.now = self.start + (index + 1) * STEP

    def writer(self, agent: str, lv: Level):
        if (agent, lv) not in self.writers:
            session = self.store.session(agent)
            session.escalate(lv, "write")
            self.writers[(agent, lv)] = session
        return self.writers[(agent, lv)]

    def apply(self, op, index: int = 0) -> None:
        kind, agent, lv, key, *rest = op
        slot = (agent, lv, key)
        visible_slot = agent in (OWN, PEER) and lv <= self.taint
        if kind in ("save_delete", "save_expired") and visible_slot and slot in self.live:
            return  # a hidden record may not replace a version the observer can see
        w = self.writer(agent, lv)
        self.at_step(index)
        if visible_slot:
            if kind == "save":
                self.live.add(slot)
            else:
                self.live.discard(slot)
        if kind == "delete":
            try:
                w.delete(key)
            except NotFound:
                pass
        elif kind == "save":
            w.save(key, rest[0], tags=rest[1], **self.when_and_context(rest))
        elif kind == "save_delete":
            w.save(key, rest[0], tags=rest[1], **self.when_and_context(rest))
            w.delete(key)
        elif kind == "save_expired":
            try:
                w.delete(key)  # leave no live hidden version behind
            except NotFound:
                pass
            w.save(key, rest[0], tags=rest[1], ttl=0.0001, **self.when_and_context(rest))

    @staticmethod
    def when_and_context(rest) -> dict:
        """A save step's occurred time and context (absent from steps written without them)."""
        day, context = (*rest[2:4], None, None)[:2]
        return {"occurred_at": None if day is None else EPOCH - timedelta(days=day), "context": context}

    def observe(self, queries) -> list:
        o = self.observer

        lineages: dict[str, int] = {}

        def mem(m):
            if m is None:
                return None
            lineage = lineages.setdefault(
                m.lineage_id, len(lineages)
            )  # ids are random: compare their pattern
            return (
                m.agent_id,
                m.key,
                m.level,
                m.content,
                m.tags,
                m.category,
                m.created_at,
                m.updated_at,
                m.expires_at,
                m.occurred_at,
                type(m).__name__,  # a plain Memory on every read: a context never comes back
                lineage,
            )

        out = [("get", k, mem(o.get(k))) for k in KEYS + HIDDEN_KEYS]
        out.append(("list", [mem(m) for m in o.list()]))
        out += [("list", t, [mem(m) for m in o.list(tag=t)]) for t in TAGS]
        since, until = OCCURRED_BOUNDS
        out.append(("occurred", [mem(m) for m in o.list(occurred_since=since, occurred_until=until)]))
        out.append(("occurred-page", [mem(m) for m in o.list(limit=1, occurred_until=until)]))
        for q in [*queries, "", "*"]:
            for n in (1, 3, 100):
                out.append(("search", q, n, [(mem(h.memory), h.score) for h in o.search(q, max_results=n)]))
        for q in queries:
            # Query expansion takes its words from the observer's own top hits; a named time lifts hits by
            # their own time: neither may let an invisible record in.
            expanded = o.search(q, max_results=3, expand=True)
            out.append(("expanded", q, [(mem(h.memory), h.score) for h in expanded]))
            timed = o.search(f"{q} on 1999-12-30", max_results=3)
            out.append(("named time", q, [(mem(h.memory), h.score) for h in timed]))
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


def replay(backend, tmp_path, data, world=World, **options) -> tuple[World, World]:
    """A scenario replayed into two stores: without and with the hidden records (caller closes both).

    ``world`` applies the ops and makes the reads (the graph's tests bring their own); ``options`` open
    both stores (e.g. a search mode).
    """
    taint, steps, _ = data
    plain = world(backend, tmp_path, taint, **options)
    noisy = world(backend, tmp_path, taint, **options)
    for index, (where, op) in enumerate(steps):
        noisy.apply(op, index)
        if where == "visible":
            plain.apply(op, index)
    for each in (plain, noisy):
        each.at_step(len(steps))
    return plain, noisy


def assert_noninterference(backend, tmp_path, data, prepare=None, world=World, **options) -> None:
    """Replay a scenario into two stores (with and without hidden records) and compare every read.

    ``prepare(store)`` runs on each store before reading.
    """
    plain, noisy = replay(backend, tmp_path, data, world, **options)
    try:
        if prepare is not None:
            prepare(plain.store)
            prepare(noisy.store)
        assert plain.observe(data[2]) == noisy.observe(data[2])
    finally:
        plain.store.close()
        noisy.store.close()


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.sampled_from([OWN, PEER, OUTSIDER]), level, st.sampled_from(KEYS), content, st.booleans()
        ),
        max_size=30,
    ),
    level,
)
def test_nothing_above_taint_or_outside_agents_is_ever_returned(backend, tmp_path, ops, taint):
    world = World(backend, tmp_path, taint)
    store = world.store
    try:
        for index, (agent, lv, key, text, delete) in enumerate(ops):
            world.apply(("save", agent, lv, key, text, []), 2 * index)
            if delete:
                world.apply(("delete", agent, lv, key), 2 * index + 1)
        o = world.observer
        seen = (
            [o.get(k) for k in KEYS] + o.list() + [h.memory for q in [*WORDS, ""] for h in o.search(q, 100)]
        )
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
