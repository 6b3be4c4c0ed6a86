"""Recall into [Memory context] goes through the policy layer, conversation scope and the relevance floor."""

from __future__ import annotations

import json

import pytest

import stratamem as sm
from stratamem.policy.engine import Policy
from stratamem.policy.loader import rules_from_yaml
from stratamem.tools import execute
from stratamem.turn import (
    ContextConfig,
    EventBus,
    EventLog,
    MemoryRecall,
    TurnSettings,
    render_memory_context,
)
from stratamem.turn.context import DEFAULT_MIN_COVERAGE

QUERY = "what do we know about the lisbon office"


def block(turn) -> str:
    return turn.messages()[-1].content


def test_quarantined_memories_are_never_injected(store) -> None:
    session = store.session("main")
    text = execute(
        session,
        "memory_save",
        {"key": "lisbon_office", "content": "The Lisbon office: api_key=abcd1234efgh"},
        policy=Policy(scan_mode="quarantine"),
    )
    assert json.loads(text)["saved"] is True
    session.save("lisbon_note", "The Lisbon office opens at nine")
    content = block(session.turn(QUERY))
    assert "lisbon_note" in content and "lisbon_office" not in content and "abcd1234" not in content


def test_context_injection_rules_block_and_redact_and_the_decision_is_audited(store) -> None:
    session = store.session("main")
    session.save("lisbon_secret", "Lisbon office alarm code is kept in the safe")
    session.save("lisbon_phone", "Lisbon office phone 555-1234")
    policy = Policy(
        rules_from_yaml("""
        - {id: no-secret, hook: PRE_CONTEXT_INJECTION, action: BLOCK,
           conditions: [{field: key, operator: equals, value: lisbon_secret}]}
        - {id: phones, hook: PRE_CONTEXT_INJECTION, action: REDACT,
           conditions: [{field: content, operator: matches, value: '\\d{3}-\\d{4}'}]}
    """)
    )
    content = block(session.turn(QUERY, policy=policy))
    assert "lisbon_secret" not in content and "555-1234" not in content and "[REDACTED]" in content
    decision = [
        e
        for e in store.audit_events()
        if e.operation == "policy.decision" and e.detail["hook"] == "PRE_CONTEXT_INJECTION"
    ][-1]
    assert decision.detail["withheld"] == 1
    assert "555" not in json.dumps(decision.detail)


def test_conversation_memories_stay_in_their_conversation(store) -> None:
    chat = store.session("main")
    chat.save("lisbon_chat", "We talked about the Lisbon office move", category="conversation")
    chat.save("lisbon_fact", "The Lisbon office moves in May")
    assert "lisbon_chat" in block(chat.turn(QUERY))
    other_chat = store.session("main")
    content = block(other_chat.turn(QUERY))
    assert "lisbon_fact" in content and "lisbon_chat" not in content
    for origin in ("cron", "daemon"):
        job = store.session("main")
        content = block(job.turn(QUERY, origin=origin))
        assert "lisbon_fact" in content and "lisbon_chat" not in content


@pytest.mark.parametrize("origin", ["cron", "daemon", "subturn"])
def test_autonomous_tool_reads_see_no_conversation_memories(store, origin: str) -> None:
    chat = store.session("main")
    chat.save("lisbon_chat", "We talked about the Lisbon office move", category="conversation")
    chat.save("lisbon_fact", "The Lisbon office moves in May")
    found = json.loads(execute(chat, "memory_search", {"query": "lisbon office"}, origin=origin))
    assert [r["key"] for r in found["results"]] == ["lisbon_fact"]
    listed = json.loads(execute(chat, "memory_list", {}, origin=origin))
    assert [m["key"] for m in listed["memories"]] == ["lisbon_fact"]
    assert json.loads(execute(chat, "memory_get", {"key": "lisbon_chat"}, origin=origin))["found"] is False
    recalled = execute(chat, "memory_recall", {"query": "lisbon office"}, origin=origin)
    assert "lisbon_chat" not in recalled and "lisbon_fact" in recalled
    # an interactive read is unchanged
    found = json.loads(execute(chat, "memory_search", {"query": "lisbon office"}, origin="interactive"))
    assert {r["key"] for r in found["results"]} == {"lisbon_chat", "lisbon_fact"}


def test_the_relevance_floor_is_on_by_default_and_drops_unrelated_entries(store) -> None:
    assert ContextConfig().min_coverage == DEFAULT_MIN_COVERAGE > 0
    session = store.session("main")
    session.save("kitchen", "the office kitchen is on the second floor")  # shares one term of five
    session.save("lisbon", "The Lisbon office relocation starts in May")
    content = block(session.turn("what do we know about lisbon relocation plans"))
    assert "lisbon" in content and "kitchen" not in content
    query = "tell me about the office christmas party budget"  # five terms, one of them "office"
    assert {h.memory.key for h in session.search(query)} == {"kitchen", "lisbon"}
    unrelated = block(store.session("main").turn(query))
    assert unrelated == query


def test_the_recall_event_carries_a_scrubbed_query_summary(store) -> None:
    log = EventLog()
    session = store.session("main")
    session.save("lisbon", "Lisbon office relocation to Lisbon")
    secret = "sk-abcdefghijklmnopqrstuvwxyz012345"
    session.turn(f"lisbon office {secret} " + "padding " * 100, events=EventBus([log], tracer=None))
    (event,) = log.of_type(MemoryRecall)
    assert secret not in event.query_summary and event.query_summary.startswith("lisbon office")
    assert len(event.query_summary) <= 80 and event.found >= 1 and event.entry_count == 1
    assert event.duration_ms >= 0


def test_the_old_render_entry_point_also_goes_through_policy(store) -> None:
    session = store.session("main")
    session.save("lisbon", "Lisbon office relocation to Lisbon", tags=["stratamem:quarantine"])
    assert render_memory_context(session, QUERY, "interactive") == ""


def test_settings_with_a_floor_of_zero_keep_every_match(store) -> None:
    session = store.session("main")
    session.save("weak", "office")
    settings = TurnSettings(context=ContextConfig(min_coverage=0.0))
    assert "weak" in block(session.turn(QUERY, settings=settings))
    assert session.taint == sm.Level.PUBLIC
