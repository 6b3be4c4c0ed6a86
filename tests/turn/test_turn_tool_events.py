"""Memory operations through the tools (and so MCP and REST) emit the turn layer's observer events."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratamem as sm
from stratamem.tools import execute
from stratamem.turn import (
    EventLog,
    MemoryRecall,
    MemoryStore,
    ToolCall,
    ToolCallRequest,
    ToolCallStarted,
    ToolResult,
)


def test_tool_calls_emit_scrubbed_bounded_events(store) -> None:
    log = EventLog()
    store.events.subscribe(log)
    session = store.session("main")
    execute(
        session,
        "memory_save",
        {"key": "k", "content": "secret content text", "category": "core"},
        origin="mcp",
    )
    execute(session, "memory_search", {"query": "content sk-abcdefghijklmnopqrstuvwxyz0123"}, origin="rest")
    execute(session, "memory_store", {"key": "z", "content": "zeroclaw text", "category": "daily"})
    execute(session, "memory_delete", {"key": "missing"})
    calls = log.of_type(ToolCall)
    assert [c.tool_name for c in calls] == ["memory_save", "memory_search", "memory_store", "memory_delete"]
    assert [c.success for c in calls] == [True, True, True, False] and calls[-1].error == "not_found"
    assert all(c.duration_ms >= 0 for c in calls) and calls[0].origin == "mcp"
    stores = log.of_type(MemoryStore)
    kind = type(store.backend).__name__
    backend = "postgresql" if "Postgres" in kind else "markdown" if "Markdown" in kind else "sqlite"
    assert [(s.key, s.category, s.backend) for s in stores] == [
        ("k", "core", backend),
        ("z", "daily", backend),
    ]
    (recall,) = log.of_type(MemoryRecall)
    assert recall.entry_count == 1 and recall.origin == "rest" and "sk-abcdef" not in recall.query_summary
    assert all("secret content" not in repr(e) for e in log.events)
    assert session.taint == sm.Level.PUBLIC


def test_a_failing_observer_never_fails_a_tool_call(store) -> None:
    def broken(event: object) -> None:
        raise RuntimeError("observer down")

    store.events.subscribe(broken)
    session = store.session("main")
    assert '"saved":true' in execute(session, "memory_save", {"key": "k", "content": "v"}).replace(" ", "")


# ------------------------------------------------------------------ no memory content in any event

CONTENT = "patient diagnosis is hypertension"


def event_text(log: EventLog) -> str:
    """Everything observers and spans receive: each event's fields and its span attributes."""
    from stratamem.turn.observe import event_attributes

    return "\n".join(repr(e) + json.dumps(event_attributes(e), ensure_ascii=False) for e in log.events)


def pairs(log: EventLog) -> list[tuple[str, str]]:
    return [(type(e).__name__, e.call_id) for e in log.events if isinstance(e, ToolCall | ToolCallStarted)]


def test_run_memory_tool_is_one_pair_without_content(store) -> None:
    log = EventLog()
    store.events.subscribe(log)
    turn = store.session("main").turn("please note the diagnosis for later")
    turn.record_tool_calls(
        [ToolCallRequest("c1", "memory_save", json.dumps({"key": "diag", "content": CONTENT}))]
    )
    message = turn.run_memory_tool("c1", "memory_save", {"key": "diag", "content": CONTENT})
    assert '"saved"' in message.content
    assert pairs(log) == [("ToolCallStarted", "c1"), ("ToolCall", "c1")]
    (result,) = log.of_type(ToolCall)
    assert (
        result.success and result.origin == "interactive" and json.loads(result.arguments) == {"key": "diag"}
    )
    assert [s.key for s in log.of_type(MemoryStore) if s.category == "core"] == ["diag"]
    assert "hypertension" not in event_text(log)


def test_execute_reports_a_correlated_pair(store) -> None:
    log = EventLog()
    store.events.subscribe(log)
    session = store.session("main")
    execute(session, "memory_save", {"key": "k", "content": CONTENT})
    execute(session, "memory_save", {"key": "j", "content": CONTENT}, call_id="runtime-7")
    (first, first_id), (second, second_id), (third, third_id), (fourth, fourth_id) = pairs(log)
    assert (first, second, third, fourth) == ("ToolCallStarted", "ToolCall", "ToolCallStarted", "ToolCall")
    assert first_id == second_id and first_id.startswith("call_") and third_id == fourth_id == "runtime-7"
    assert "hypertension" not in event_text(log)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=12, max_size=40).map(
        lambda t: f"zx{t}xz"
    ),
    extra=st.sampled_from(["note", "text", "body", "content"]),
)
def test_no_event_on_any_path_carries_what_was_stored(store, content: str, extra: str) -> None:
    """In-process tools, a turn's memory tool, a runtime's own tool echoing the content, the turn API."""
    from stratamem.server.turn_ops import TurnOps

    log = EventLog()
    unsubscribe = store.events.subscribe(log)
    try:
        session = store.session("main")
        arguments = {"key": "k", "content": content}
        execute(session, "memory_save", {**arguments, extra: content})  # an undeclared argument too
        execute(session, "memory_store", {**arguments, "category": "core"})
        execute(session, "memory_save_many", {"items": [arguments]})
        execute(session, "memory_save", {"key": 7, "content": content})  # refused: still no content
        turn = session.turn("please keep this for later")
        calls = [
            ToolCallRequest("m", "memory_save", json.dumps(arguments)),
            ToolCallRequest("x", "send_email", json.dumps({"body": content, "n": 4711})),
        ]
        turn.record_tool_calls(calls)
        turn.run_memory_tool("m", "memory_save", arguments)
        turn.record_tool_result(
            "x", "send_email", ToolResult(False, "", f"could not send {content}"), arguments={"body": content}
        )
        turn.end("done")

        class Here:
            def session_for(self, principal, session_id):
                return session

            def policy_for(self, principal):
                return None

        ops = TurnOps(Here())
        begun = ops.begin(None, session.id, {"user_message": "another question"})  # type: ignore[arg-type]
        ops.tool_calls(
            None,  # type: ignore[arg-type]
            session.id,
            begun["turn_id"],
            {"tool_calls": [{"id": "r", "name": "memory_save", "arguments": arguments}]},
        )
        ops.tool_result(
            None,  # type: ignore[arg-type]
            session.id,
            begun["turn_id"],
            {"call_id": "r", "tool_name": "memory_save", "output": "{}", "arguments": arguments},
        )
    finally:
        unsubscribe()
    text = event_text(log)
    assert content not in text
    assert all("4711" not in e.arguments for e in log.of_type(ToolCall) + log.of_type(ToolCallStarted))
    started = [e.call_id for e in log.of_type(ToolCallStarted)]
    ended = [e.call_id for e in log.of_type(ToolCall)]
    assert sorted(started) == sorted(ended) and len(set(ended)) == len(ended)  # one pair per call
