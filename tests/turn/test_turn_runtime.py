from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from turn_fakes import FakeSession, Level, fixed_clock, hit

from stratamem.turn import (
    CostLedger,
    EventBus,
    EventLog,
    HistoryStore,
    HistoryTrimmed,
    MemoryRecall,
    MemoryStore,
    Message,
    ModelPrice,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    ToolResultLimits,
    Turn,
    TurnSettings,
    ValidationError,
)
from stratamem.turn.trim import BREADCRUMB

BLOCK = "[Memory context]\n- user_name: Alice\n[/Memory context]\n\n"


def make_turn(store: HistoryStore, session: FakeSession, **kwargs: object) -> Turn:
    return Turn(session, store, "s1", "interactive", clock=fixed_clock, **kwargs)  # type: ignore[arg-type]


def test_a_full_turn(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.db")
    session = FakeSession(hits=[hit("user_name", "Alice", 0.9)], taint=Level.INTERNAL)
    log = EventLog()
    ledger = CostLedger({"m": ModelPrice(Decimal(3), Decimal(15))}, clock=fixed_clock)
    settings = TurnSettings(tool_limits=ToolResultLimits(max_tool_result_chars=100))
    turn = make_turn(
        store,
        session,
        settings=settings,
        system_prompt="Be brief.",
        events=EventBus([log], tracer=None),
        costs=ledger,
        agent_id="agent-1",
    )

    prompt = turn.begin("What is my name? I keep forgetting it.")
    assert prompt == [
        Message("system", "Be brief."),
        Message("user", BLOCK + "What is my name? I keep forgetting it."),
    ]
    assert turn.messages() == prompt  # a retry does not stack the block

    turn.record_tool_calls([ToolCallRequest("c1", "lookup", '{"q": "name", "api_key": "sk-verysecret"}')])
    tool_message = turn.record_tool_result(
        "c1", "lookup", ToolResult(True, "z" * 500), arguments='{"q": "name", "api_key": "sk-verysecret"}'
    )
    assert tool_message.role == "tool" and len(tool_message.content) < 200
    record = turn.record_usage("m", 1000, 500)
    assert record is not None and record.cost_usd == Decimal("0.0105") and record.agent_id == "agent-1"
    turn.end("Your name is Alice.")

    stored = store.messages("s1")
    assert [s.message.role for s in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[0].message.content == "What is my name? I keep forgetting it."  # no block in history
    assert {s.taint for s in stored} == {"INTERNAL"}
    assert session.saved and session.saved[0][2] == "conversation"

    kinds = [type(e) for e in log.events]
    assert kinds == [MemoryRecall, MemoryStore, ToolCall]
    (tool_event,) = log.of_type(ToolCall)
    assert tool_event.truncated and tool_event.output_chars == 500
    assert "sk-verysecret" not in repr(tool_event)

    with pytest.raises(ValidationError):
        turn.end("again")


def test_later_turns_trim_history_and_can_fetch_it_back(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.db")
    session = FakeSession()
    for i in range(5):
        turn = make_turn(store, session)
        turn.begin(f"question {i} " + "x" * 200)
        turn.end(f"answer {i}")

    log = EventLog()
    turn = make_turn(
        store, session, settings=TurnSettings(history_budget_tokens=150), events=EventBus([log], tracer=None)
    )
    prompt = turn.begin("final question")
    assert prompt[0] == BREADCRUMB
    assert prompt[-1] == Message("user", "final question")
    assert sum(m == BREADCRUMB for m in prompt) == 1
    (trimmed,) = log.of_type(HistoryTrimmed)
    omitted = turn.omitted_messages()
    assert len(omitted) == trimmed.messages_dropped
    assert omitted[0] == Message("user", "question 0 " + "x" * 200)
    assert store.count("s1") == 11


def test_usage_without_ledger_is_ignored(tmp_path: Path) -> None:
    turn = make_turn(HistoryStore(tmp_path / "h.db"), FakeSession())
    turn.begin("hello there")
    assert turn.record_usage("m", 1, 1) is None


def test_turn_order_is_enforced(tmp_path: Path) -> None:
    turn = make_turn(HistoryStore(tmp_path / "h.db"), FakeSession())
    with pytest.raises(ValidationError) as info:
        turn.record_tool_result("c", "t", ToolResult(True, ""))
    assert info.value.code == "VALIDATION_ERROR"
    turn.begin("hi")
    with pytest.raises(ValidationError):
        turn.begin("hi again")


def test_unknown_origin_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as info:
        Turn(FakeSession(), HistoryStore(tmp_path / "h.db"), "s1", "webhook")
    assert "interactive" in str(info.value)
