"""One API: ``session.turn(user_message, origin=...)`` needs nothing but the store."""

from __future__ import annotations

from decimal import Decimal

import pytest

import stratamem as sm
from stratamem.turn import (
    Budget,
    BudgetStatus,
    ContextConfig,
    EventBus,
    EventLog,
    HistoryTrimmed,
    MemoryRecall,
    MemoryStore,
    Message,
    ModelPrice,
    ToolCall,
    ToolCallRequest,
    ToolCallStarted,
    ToolResult,
    ToolResultLimits,
    Transcript,
    Turn,
    TurnSettings,
)
from stratamem.turn.errors import LimitExceededError, NotFoundError, TurnStateError, ValidationError
from stratamem.turn.trim import BREADCRUMB

SETTINGS = TurnSettings(
    context=ContextConfig(min_coverage=0.0),
    tool_limits=ToolResultLimits(100),
    prices={"m": ModelPrice(Decimal(3), Decimal(15))},
    budget=Budget(daily_usd=Decimal("0.012")),
)


def test_a_full_turn_on_nothing_but_the_session(store) -> None:
    log = EventLog()
    session = store.session("main")
    session.save("user_name", "The user is called Alice")
    session.escalate("INTERNAL", "work chat")
    turn = session.turn(
        "What is my name? I keep forgetting it.",
        settings=SETTINGS,
        system_prompt="Be brief.",
        events=EventBus([log], tracer=None),
    )
    prompt = turn.messages()
    assert prompt[0] == Message("system", "Be brief.")
    assert prompt[1].content == (
        "[Memory context]\n- user_name: The user is called Alice\n[/Memory context]\n\n"
        "What is my name? I keep forgetting it."
    )
    assert turn.messages() == prompt  # a retry does not stack the block

    turn.record_tool_calls(
        [ToolCallRequest("c1", "lookup", '{"q": "name", "api_key": "sk-verysecretverysecret1"}')]
    )
    tool_message = turn.record_tool_result(
        "c1", "lookup", ToolResult(True, "z" * 500), arguments='{"api_key": "sk-verysecretverysecret1"}'
    )
    assert tool_message.role == "tool" and len(tool_message.content) < 200
    report = turn.record_usage("m", 1000, 500)
    assert report.record.cost_usd == Decimal("0.0105") and report.record.level is sm.Level.INTERNAL
    assert report.budget is not None and report.budget.status is BudgetStatus.WARNING
    turn.end("Your name is Alice.")

    rows, total = Transcript(session).page()
    assert total == 4 and [r.message.role for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[0].message.content == "What is my name? I keep forgetting it."  # no block in the transcript
    assert {r.level for r in rows} == {"INTERNAL"}
    # each prompt recalls anew (begin, then the two messages() calls); one start/result pair per call
    assert [type(e) for e in log.events] == [
        MemoryRecall,
        MemoryStore,
        MemoryRecall,
        MemoryRecall,
        ToolCallStarted,
        ToolCall,
    ]
    (tool_event,) = log.of_type(ToolCall)
    (started,) = log.of_type(ToolCallStarted)
    assert started.call_id == tool_event.call_id == "c1" and "sk-verysecret" not in repr(started)
    assert tool_event.truncated and tool_event.output_chars == 500 and "sk-verysecret" not in repr(tool_event)
    (store_event,) = log.of_type(MemoryStore)
    assert store_event.category == "conversation" and store_event.success

    with pytest.raises(TurnStateError) as twice:
        turn.end("again")
    assert twice.value.code == "TURN_STATE"
    assert Transcript(session).page()[1] == 4  # nothing was added


def test_no_write_down_through_the_transcript_after_reset(store) -> None:
    """Regression: a CONFIDENTIAL transcript was replayed into the conversation after reset() at PUBLIC."""
    session = store.session("main")
    session.escalate("CONFIDENTIAL", "read the payroll")
    turn = session.turn("summarise the payroll file", settings=SETTINGS)
    turn.end("Payroll: Bob earns 250k")
    fresh = session.reset()
    prompt = fresh.turn("what did we discuss?", settings=SETTINGS).messages()
    assert all("250k" not in m.content for m in prompt)
    assert [m.role for m in prompt] == ["user"]


def test_resume_rebuilds_the_state_and_refuses_a_second_end(store) -> None:
    session = store.session("main")
    turn = session.turn("first question here", origin="channel", settings=SETTINGS)
    turn.record_tool_calls([ToolCallRequest("c1", "t"), ToolCallRequest("c2", "t")])
    turn.record_tool_result("c1", "t", ToolResult(True, "one"))
    again = Turn.resume(session, turn.id, settings=SETTINGS)
    assert again.origin.value == "channel" and again.state == "open" and again.pending_calls == {"c2": "t"}
    again.record_tool_result("c2", "t", ToolResult(True, "two"))
    again.end("done")
    with pytest.raises(TurnStateError):
        Turn.resume(session, turn.id).end("done twice")
    with pytest.raises(NotFoundError):
        Turn.resume(session, 1)  # position 1 is not a user message


def test_malformed_tool_call_pairs_are_refused(store) -> None:
    turn = store.session("main").turn("hello there", settings=SETTINGS)
    with pytest.raises(ValidationError):
        turn.record_tool_result("nope", "t", ToolResult(True, "x"))  # no such call
    turn.record_tool_calls([ToolCallRequest("c1", "t")])
    with pytest.raises(ValidationError):
        turn.record_tool_calls([ToolCallRequest("c1", "t")])  # already pending
    with pytest.raises(ValidationError):
        turn.record_tool_result("c1", "other", ToolResult(True, "x"))  # wrong tool
    turn.record_tool_result("c1", "t", ToolResult(True, "x"))
    with pytest.raises(ValidationError):
        turn.record_tool_result("c1", "t", ToolResult(True, "x"))  # answered twice
    with pytest.raises(ValidationError):
        turn.record_tool_calls([])


def test_unknown_origins_and_bad_messages_are_refused_before_anything_is_written(store) -> None:
    session = store.session("main")
    with pytest.raises(ValidationError):
        session.turn("hi", origin="webhook")
    for bad in ("", "   ", None, 3):
        with pytest.raises(ValidationError):
            session.turn(bad)  # type: ignore[arg-type]
    with pytest.raises(LimitExceededError):
        session.turn("x" * 1_000_001)
    assert Transcript(session).page() == ([], 0)


def test_a_ten_megabyte_tool_result_is_bounded(store) -> None:
    session = store.session("main")
    turn = session.turn("run the big tool", settings=TurnSettings())
    turn.record_tool_calls([ToolCallRequest("c1", "dump")])
    message = turn.record_tool_result("c1", "dump", ToolResult(True, "y" * 10_000_000))
    assert len(message.content) < 60_000
    turn.end("ok")


def test_tool_results_per_turn_are_bounded(store) -> None:
    turn = store.session("main").turn("loop", settings=TurnSettings(max_tool_results=2))
    with pytest.raises(LimitExceededError):
        turn.record_tool_calls([ToolCallRequest(f"c{i}", "t") for i in range(3)])
    turn.record_tool_calls([ToolCallRequest("c0", "t")])
    turn.record_tool_result("c0", "t", ToolResult(True, ""))
    turn.record_tool_calls([ToolCallRequest("c1", "t")])
    with pytest.raises(LimitExceededError):
        turn.record_tool_calls([ToolCallRequest("c2", "t")])
    turn.record_tool_result("c1", "t", ToolResult(True, ""))
    turn.end("done")
    assert turn.record_usage("m", 1, 1).record.model == "m"  # the final call's usage may come after end


def test_trimming_keeps_the_newest_turns_and_omitted_history_is_fetchable(store) -> None:
    log = EventLog()
    session = store.session("main")
    settings = TurnSettings(history_budget_tokens=200, history_window=50)
    for i in range(60):
        turn = session.turn(f"question {i} " + "w" * 100, settings=settings)
        turn.end(f"answer {i}")
    turn = session.turn("the last question", settings=settings, events=EventBus([log], tracer=None))
    prompt = turn.messages()
    assert prompt[0] == BREADCRUMB and prompt[-1].content.endswith("the last question")
    trim = turn.last_trim
    assert trim is not None and trim.omitted_range is not None and trim.omitted_range[0] == 0
    omitted = turn.omitted_messages()
    assert omitted[0].message.content.startswith("question 0") and len(omitted) <= 1000
    assert log.of_type(HistoryTrimmed)


def test_a_transcript_of_100k_messages_costs_one_bounded_read(tmp_path) -> None:
    store = sm.open_store(str(tmp_path / "big.db"))
    session = store.session("main")
    Transcript(session).append(
        *[Message("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(100_000)]
    )
    turn = session.turn("and now?", settings=TurnSettings(history_window=100))
    prompt = turn.messages()
    assert len(prompt) <= 101 and prompt[-1].content == "and now?"
    assert turn.last_trim is not None and turn.last_trim.messages_dropped >= 99_900
    store.close()
