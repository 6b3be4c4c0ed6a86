"""Noninterference for the turn's records, as a property (cf. test_noninterference.py).

Two stores receive the same visible transcript history; one also receives
records the observer must not see: the rest of a transcript written after its
session rose above the observer's taint, other sessions' transcripts (own
agent above the taint, other agents at any level), and usage above the taint.
Every transcript read (pages, totals, positions), every trim of what was read,
the observer's own turn prompt and its budget status must come out identical.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from conftest import BACKENDS, fresh_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem import Level
from stratamem.turn import Budget, CostLedger, Message, Transcript, TurnSettings, trim_history

WORDS = ["apple", "river", "meeting", "friday", "tea", "the", "plan", "budget"]
OWN, OUTSIDER = "a", "c"

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
role = st.sampled_from(["user", "assistant"])
level = st.sampled_from(list(Level))


@st.composite
def scenario(draw):
    taint = draw(level)
    # One transcript, written while its session's taint rose: levels never go down within it.
    messages = sorted(draw(st.lists(st.tuples(level, role, text), max_size=14)), key=lambda m: m[0])
    others = draw(st.lists(st.tuples(st.sampled_from([OWN, OUTSIDER]), level, role, text), max_size=6))
    usage = draw(st.lists(st.tuples(level, st.integers(0, 5)), max_size=5))
    budget = draw(st.integers(1, 40))
    return taint, messages, others, usage, budget


def write(store, agent: str, lv: Level, items) -> str:
    session = store.session(agent)
    for message_level, message_role, content in items:
        session.escalate(message_level, "write")
        Transcript(session).append(Message(message_role, content))
    session.escalate(lv, "write")
    return session.id


def observe(store, taint: Level, source_id: str, budget: int) -> list:
    observer = store.session(OWN)
    observer.escalate(taint, "observe")
    view = Transcript(observer)
    out: list = []
    for start, limit in [(0, 100), (0, 1), (1, 2), (3, 5), (50, 5)]:
        rows, total = view.page(start, limit, transcript_id=source_id)
        out.append(("page", start, limit, total, [(r.position, r.level, r.message) for r in rows]))
        trimmed = trim_history([r.message for r in rows], budget * 4)
        out.append(("trim", trimmed.messages, trimmed.dropped_indices, trimmed.tokens_after))
    turn = observer.turn(
        "what about the apple meeting", settings=TurnSettings(history_budget_tokens=budget * 4)
    )
    out.append(("prompt", turn.messages(), turn.last_trim))
    report = CostLedger(observer).check_budget(Budget(daily_usd=Decimal(3)))
    out.append(("budget", report.status, report.daily_spent, len(CostLedger(observer).records())))
    return out


def replay(store, data, *, hidden: bool) -> list:
    taint, messages, others, usage, budget = data
    visible = [m for m in messages if m[0] <= taint]
    source_id = write(store, OWN, taint, messages if hidden else visible)
    spender = store.session(OWN)
    for lv, dollars in sorted(usage):
        if lv <= taint or hidden:
            spender.escalate(lv, "spend")
            CostLedger(spender).record("m", 1, 1, cost_usd=dollars)
    if hidden:
        for agent, lv, message_role, content in others:
            if agent != OWN or lv > taint:
                write(store, agent, lv, [(lv, message_role, content)])
    return observe(store, taint, source_id, budget)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario())
def test_invisible_turn_records_change_nothing_observable(backend, tmp_path, data):
    plain, noisy = fresh_store(backend, tmp_path), fresh_store(backend, tmp_path)
    try:
        assert replay(plain, data, hidden=False) == replay(noisy, data, hidden=True)
    finally:
        plain.close()
        noisy.close()
