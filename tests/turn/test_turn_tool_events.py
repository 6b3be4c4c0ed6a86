"""Memory operations through the tools (and so MCP and REST) emit the turn layer's observer events."""

from __future__ import annotations

import stratamem as sm
from stratamem.tools import execute
from stratamem.turn import EventLog, MemoryRecall, MemoryStore, ToolCall


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
