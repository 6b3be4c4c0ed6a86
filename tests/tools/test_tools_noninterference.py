"""Property: tool answers are byte-identical whether or not the store holds what the reader cannot see.

The core proves noninterference for sessions; this checks the tool layer adds
no channel of its own (shapes, errors, scores, zeroclaw text, quarantine filter).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tools_support import fixed_clock_store

from stratamem import Level
from stratamem.tools import execute

WORDS = ["apple", "river", "running", "blue", "meeting", "friday", "tea"]
KEYS = ["k0", "k1", "k2"]
content = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


def writer(store, agent, level):
    s = store.session(agent_id=agent, session_id=f"{agent}-{level.name}")
    s.escalate(level, "test")
    return s


@st.composite
def scenario(draw):
    taint = draw(st.sampled_from(list(Level)))
    below = [lv for lv in Level if lv <= taint]
    above = [lv for lv in Level if lv > taint]
    visible = st.tuples(st.just("a"), st.sampled_from(below), st.sampled_from(KEYS), content)
    hidden_choices = [st.tuples(st.just("c"), st.sampled_from(list(Level)), st.sampled_from(KEYS), content)]
    if above:
        hidden_choices.append(st.tuples(st.just("a"), st.sampled_from(above), st.sampled_from(KEYS), content))
    steps = draw(
        st.lists(
            st.one_of(
                st.tuples(st.just(True), visible), st.tuples(st.just(False), st.one_of(*hidden_choices))
            ),
            max_size=10,
        )
    )
    query = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join))
    return taint, steps, query


def answers(taint, steps, query, include_hidden):
    with fixed_clock_store() as store:
        for is_visible, (agent, level, key, text) in steps:
            if is_visible or include_hidden:
                writer(store, agent, level).save(key, text)
        reader = store.session(agent_id="a", session_id="reader")
        reader.escalate(taint, "test")
        calls = [("memory_get", {"key": k}) for k in KEYS] + [
            ("memory_search", {"query": query}),
            ("memory_search", {"query": "*"}),
            ("memory_list", {}),
            ("memory_recall", {"query": query}),
            ("memory_recall", {}),
            ("memory_export", {}),
            ("memory_delete", {"key": "k0"}),
            ("memory_forget", {"key": "k1"}),
        ]
        return [execute(reader, name, args) for name, args in calls]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_hidden_records_change_no_tool_answer(case):
    taint, steps, query = case
    assert answers(taint, steps, query, include_hidden=False) == answers(
        taint, steps, query, include_hidden=True
    )
