"""Noninterference across levels × compartments (need-to-know, ``stratamem.labels``), as properties.

The replay of ``test_noninterference``, with labels: the observer's taint is a level and a set of the
store's compartments, every writer writes at a label (level and compartments, of its own agent or a peer
or an outsider), and the records the observer must not see are those whose label is not ≤ its taint —
a level above it, a compartment outside it, or both — besides the other agents' and the soft-deleted or
expired ones the plain replay already holds. The store that holds them also defines one compartment the
other store lacks (only hidden records use it). Every read must come out identical in both stores: get,
list (whole, filtered, and page by page with the cursors), search in every mode (results, order, scores,
counts), the turn's recall block, the errors of reads of keys only hidden versions hold, and what the
observer's own saves over such keys return.

``test_visible_view_matches_reference`` checks the view itself against a pure reference: the versions a
taint reads (``labels.reads``) and, of each key's, the one with the greatest stored integer.

The graph is tested the same way (degrees, search, reads).
"""

from __future__ import annotations

import pytest
from conftest import BACKENDS, FakeClock, fresh_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_graph_noninterference import HIDDEN_NAMES, NAMES
from test_graph_noninterference import World as GraphWorld
from test_graph_noninterference import _ops as graph_ops
from test_graph_noninterference import text as graph_text
from test_noninterference import HIDDEN_KEYS, KEYS, OWN, PEER, WORDS, World, assert_noninterference, saved

from stratamem import Level, NotFound, tools
from stratamem.labels import Label, reads
from stratamem.turn.context import ContextConfig
from stratamem.turn.recall import recall_block

#: the compartments both stores define, in this order (a label's bits follow it)
COMPARTMENTS = ("HR", "FIN", "OPS", "LEGAL")
#: a compartment only the store with hidden records defines, after the others; only hidden records use it
SECRET = "SECRET"
OUTSIDER = "c"

level = st.sampled_from(list(Level))
some_compartments = st.frozensets(st.sampled_from(COMPARTMENTS))


def labels_within(taint: Label):
    """Labels ≤ ``taint``."""
    return st.builds(
        Label,
        st.sampled_from([lv for lv in Level if lv <= taint.level]),
        st.frozensets(st.sampled_from(sorted(taint.compartments)))
        if taint.compartments
        else st.just(frozenset()),
    )


def labels_not_within(taint: Label):
    """Labels the taint may not read: a compartment outside it at a level within it (what only the
    compartment test hides), a level above it with compartments within it, or both."""
    within = labels_within(taint)
    outside = st.sampled_from(sorted({*COMPARTMENTS, SECRET} - taint.compartments))
    beyond = st.builds(
        lambda x, extra, more: Label(x.level, x.compartments | {extra} | more),
        within,
        outside,
        some_compartments,
    )
    above = [lv for lv in Level if lv > taint.level]
    if not above:
        return beyond
    higher = st.sampled_from(above)
    return st.one_of(
        beyond,
        st.builds(lambda lv, x: Label(lv, x.compartments), higher, within),
        st.builds(lambda lv, x: Label(lv, x.compartments), higher, beyond),
    )


def visible_op(taint: Label):
    agent = st.sampled_from([OWN, PEER])
    key = st.sampled_from(KEYS)
    lab = labels_within(taint)
    return st.one_of(saved("save", agent, lab, key), st.tuples(st.just("delete"), agent, lab, key))


def hidden_op(taint: Label):
    mine = st.sampled_from([OWN, PEER])
    anyone = st.sampled_from([OWN, PEER, OUTSIDER])
    key = st.sampled_from(KEYS + HIDDEN_KEYS)
    hidden = labels_not_within(taint)
    seen = labels_within(taint)
    every = st.one_of(seen, hidden)
    return st.one_of(
        saved("save", anyone, hidden, key),
        saved("save_delete", anyone, hidden, key),
        st.tuples(st.just("delete"), mine, hidden, st.sampled_from(KEYS)),
        saved("save", st.just(OUTSIDER), every, key),
        # gone records on the very slots the visible history writes
        saved("save_expired", mine, seen, st.sampled_from(KEYS)),
        saved("save_delete", mine, seen, st.sampled_from(KEYS)),
    )


def scenarios(visible, hidden, queries, steps: int):
    """An observer's taint (any label), a history of steps the taint may read (``visible(taint)``) or not
    (``hidden(taint)``), and the queries it asks."""
    taints = st.builds(Label, level, some_compartments)
    return taints.flatmap(
        lambda taint: st.tuples(
            st.just(taint),
            st.lists(
                st.one_of(
                    st.tuples(st.just("visible"), visible(taint)), st.tuples(st.just("hidden"), hidden(taint))
                ),
                max_size=steps,
            ),
            queries,
        )
    )


memory_queries = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join), min_size=1, max_size=2
)


def scenario():
    return scenarios(visible_op, hidden_op, memory_queries, 25)


def labelled_session(store, agent: str, label: Label, peers=(), cleared=frozenset()):
    """A session of ``agent`` whose taint is ``label``, cleared for its compartments and ``cleared``; the
    one compartment only hidden records use is defined on first use."""
    if SECRET in label.compartments and SECRET not in store.compartments.current(fresh=True):
        store.define_compartments(SECRET)
    session = store.session(agent, peers=peers, compartments=label.compartments | cleared)
    session.escalate(label.level, "label")
    for name in sorted(label.compartments):
        session.enter(name, "label")
    assert session.label == label
    return session


class LabelWorld(World):
    """The memory replay's world with labels for levels: the observer reads at a label (own agent and
    one peer), writers write at labels."""

    def __init__(self, backend: str, tmp_path, taint: Label, **options) -> None:
        self.clock = FakeClock()
        self.start = self.clock.now
        self.store = fresh_store(backend, tmp_path, clock=self.clock, **options)
        self.store.define_compartments(*COMPARTMENTS)
        self.taint = taint
        self.writers = {}
        self.live = set()
        self.observer = labelled_session(self.store, OWN, taint, peers=(PEER,))

    def writer(self, agent: str, label: Label):
        if (agent, label) not in self.writers:
            self.writers[(agent, label)] = labelled_session(self.store, agent, label)
        return self.writers[(agent, label)]

    def observe(self, queries) -> list:
        out = super().observe(queries)
        o = self.observer

        def named(m):
            return (
                None if m is None else (m.agent_id, m.key, m.content, m.label, m.compartments, m.label_code)
            )

        out += [("label", k, named(o.get(k))) for k in KEYS + HIDDEN_KEYS]
        out.append(("labels", [named(m) for m in o.list()]))
        for size in (1, 2, 3):
            cursor, pages = None, []
            while True:
                page = o.list(limit=size, cursor=cursor)
                pages.append(([named(m) for m in page], page.next_cursor))
                cursor = page.next_cursor
                if cursor is None:
                    break
            out.append(("pages", size, pages))
        for q in queries:
            out.append(
                ("labelled hits", q, [(named(h.memory), h.score) for h in o.search(q, max_results=100)])
            )
            block = recall_block(o, q, "interactive", ContextConfig(), self.clock.now)
            out.append(("recall", q, block))
            out.append(("tool", q, tools.execute(o, "memory_search", {"query": q, "max_results": 5})))
        out.append(("tool list", tools.execute(o, "memory_list", {"limit": 2})))
        for k in HIDDEN_KEYS:
            try:
                o.delete(k)
            except NotFound as exc:
                out.append(("delete-error", k, exc.code, exc.message))
        # The observer's own saves land on keys hidden versions may hold: what comes back (times, label)
        # and what is read after must not depend on them.
        lineages: dict[str, int] = {}
        for k in KEYS + HIDDEN_KEYS:
            m = o.save(k, "observer wrote this")
            lineage = lineages.setdefault(m.lineage_id, len(lineages))
            out.append(("own save", named(m), m.created_at, m.updated_at, lineage))
        out.append(("after saves", [named(m) for m in o.list()]))
        return out


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario())
def test_records_outside_the_label_change_nothing_observable(backend, tmp_path, data):
    assert_noninterference(backend, tmp_path, data, world=LabelWorld, search_mode="lexical")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario(), st.booleans())
def test_records_outside_the_label_change_nothing_in_dense_modes(backend, mode, tmp_path, data, reindex):
    prepare = (lambda store: store.reindex()) if reindex else None
    assert_noninterference(
        backend, tmp_path, data, prepare=prepare, world=LabelWorld, search_mode=mode, embedder="hash"
    )


# ---------------------------------------------------------------------------- the visible view's reference


def code_of(label: Label, defined=COMPARTMENTS) -> int:
    """The stored integer of a label, computed from the design (level | bits of defined names << 2)."""
    return int(label.level) | sum(1 << (2 + defined.index(c)) for c in label.compartments)


@st.composite
def history(draw):
    """Saves and deletes at any label by the own agent, a peer and an outsider, with the observer's taint
    rising (to a join) between them."""
    label = st.builds(Label, level, some_compartments)
    step = st.one_of(
        st.tuples(
            st.just("save"),
            st.sampled_from([OWN, PEER, OUTSIDER]),
            label,
            st.sampled_from(KEYS),
            st.sampled_from(WORDS),
        ),
        st.tuples(st.just("delete"), st.sampled_from([OWN, PEER, OUTSIDER]), label, st.sampled_from(KEYS)),
        st.tuples(st.just("rise"), label),
    )
    return draw(st.builds(Label, level, some_compartments)), draw(st.lists(step, max_size=40))


def reference_version(live: dict, taint: Label, agent: str, key: str):
    """The version of ``agent``'s ``key`` a session at ``taint`` is shown: of the live versions it reads
    (``labels.reads``), the one with the greatest stored integer; None when it reads none."""
    codes = [code for (a, k, code) in live if a == agent and k == key and reads(code_of(taint), code)]
    return None if not codes else (agent, key, live[(agent, key, max(codes))], max(codes))


def reference_get(live: dict, taint: Label, key: str):
    """What ``get`` must return: the own agent's version, else the peer's."""
    return reference_version(live, taint, OWN, key) or reference_version(live, taint, PEER, key)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history())
def test_visible_view_matches_reference(backend, tmp_path, data):
    start, steps = data
    store = fresh_store(backend, tmp_path)
    try:
        store.define_compartments(*COMPARTMENTS)
        taint = start
        observer = labelled_session(store, OWN, taint, peers=(PEER,), cleared=frozenset(COMPARTMENTS))
        writers: dict = {}
        live: dict[tuple[str, str, int], str] = {}
        for step in steps:
            if step[0] == "rise":
                taint = taint.join(step[1])
                observer.escalate(taint.level, "rise")
                for name in sorted(step[1].compartments - observer.compartments):
                    observer.enter(name, "rise")
                assert observer.label == taint
                continue
            kind, agent, label, key, *rest = step
            if (agent, label) not in writers:
                writers[(agent, label)] = labelled_session(store, agent, label)
            w = writers[(agent, label)]
            if kind == "save":
                assert w.save(key, rest[0]).label == label
                live[(agent, key, code_of(label))] = rest[0]
            else:
                try:
                    gone = w.delete(key)
                    assert gone.label == label
                    del live[(agent, key, code_of(label))]
                except NotFound:
                    assert (agent, key, code_of(label)) not in live
            for k in KEYS:
                m = observer.get(k)
                got = None if m is None else (m.agent_id, m.key, m.content, m.label_code)
                assert got == reference_get(live, taint, k), (k, taint)
        view = {(m.agent_id, m.key, m.content, m.label_code) for m in observer.list()}
        expected = {reference_version(live, taint, agent, k) for agent in (OWN, PEER) for k in KEYS}
        assert view == expected - {None}
    finally:
        store.close()


# ---------------------------------------------------------------------------- the graph


def graph_visible_op(taint: Label):
    return graph_ops(st.sampled_from([OWN, PEER]), labels_within(taint), st.sampled_from(NAMES))


def graph_hidden_op(taint: Label):
    every = st.sampled_from(NAMES + HIDDEN_NAMES)
    return st.one_of(
        graph_ops(st.sampled_from([OWN, PEER, OUTSIDER]), labels_not_within(taint), every),
        graph_ops(st.just(OUTSIDER), labels_within(taint), every),
    )


def graph_scenario():
    return scenarios(graph_visible_op, graph_hidden_op, st.lists(graph_text, min_size=1, max_size=2), 30)


class LabelGraphWorld(GraphWorld):
    """The graph replay's world with labels: writers write graph records at labels, the observer reads
    (nodes, search, neighbours, degrees, paths, stats, pages, suggestions) at one."""

    def __init__(self, backend: str, tmp_path, taint: Label) -> None:
        self.store = fresh_store(backend, tmp_path)
        self.store.define_compartments(*COMPARTMENTS)
        self.writers = {}
        self.observer = labelled_session(self.store, OWN, taint, peers=(PEER,))

    def writer(self, agent, label):
        if (agent, label) not in self.writers:
            self.writers[(agent, label)] = labelled_session(self.store, agent, label).graph
        return self.writers[(agent, label)]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph_scenario())
def test_graph_records_outside_the_label_change_nothing_observable(backend, tmp_path, data):
    assert_noninterference(backend, tmp_path, data, world=LabelGraphWorld)


def test_the_design_fixes_the_stored_integer(tmp_path):
    """The reference above computes codes from the design; the store must agree (names to bits in
    definition order), or the reference would test nothing."""
    store = fresh_store("sqlite-memory", tmp_path)
    try:
        store.define_compartments(*COMPARTMENTS)
        for lv in Level:
            for names in ([], ["HR"], ["FIN", "LEGAL"], list(COMPARTMENTS)):
                label = Label(lv, frozenset(names))
                assert store.compartments.encode(label) == code_of(label)
    finally:
        store.close()
