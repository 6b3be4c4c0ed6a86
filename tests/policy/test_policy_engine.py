"""The policy pipeline end to end: hooks, timeouts, approvals, redaction, output, context, audit."""

from __future__ import annotations

import json
import threading
import time

import pytest
from policy_support import new_store

from stratamem import Level
from stratamem.policy import Action, Decision, HookPoint, Policy, rules_from_yaml
from stratamem.tools import execute

SECRET_CONTENT = "the merger with Initech closes on 2026-05-01"


@pytest.fixture
def store():
    with new_store() as opened:
        yield opened


def decisions(store):
    return [e for e in store.audit_events() if e.operation == "policy.decision"]


def code(text):
    return json.loads(text)["error"]["code"]


# hooks ------------------------------------------------------------------------------


def test_a_hook_that_raises_blocks(store):
    def explode(facts):
        raise RuntimeError("boom")

    policy = Policy(hooks=[(HookPoint.PRE_TOOL_CALL, explode)])
    s = store.session()
    assert code(execute(s, "memory_save", {"key": "k", "content": "v"}, policy=policy)) == "POLICY_BLOCKED"
    assert s.get("k") is None
    last = decisions(store)[-1]
    assert (
        last.outcome == "blocked"
        and last.detail["source"] == "error"
        and last.detail["error"] == "RuntimeError"
    )


def test_a_slow_hook_times_out_and_blocks(store):
    release = threading.Event()

    def slow(facts):
        release.wait(5)
        return None

    policy = Policy(hooks=[("PRE_TOOL_CALL", slow)], timeout=0.05)
    s = store.session()
    started = time.monotonic()
    text = execute(s, "memory_save", {"key": "k", "content": "v"}, policy=policy)
    release.set()
    assert time.monotonic() - started < 2
    assert code(text) == "POLICY_BLOCKED" and "timed out" in text
    assert s.get("k") is None
    assert decisions(store)[-1].detail["source"] == "timeout"


def test_a_slow_response_hook_blocks_the_answer(store):
    def slow(facts):
        time.sleep(0.5)

    s = store.session()
    s.save("k", "v")
    policy = Policy(hooks=[(HookPoint.POST_TOOL_RESPONSE, slow)], timeout=0.05)
    assert code(execute(s, "memory_get", {"key": "k"}, policy=policy)) == "POLICY_BLOCKED"


def test_hooks_see_facts_and_may_return_actions(store):
    seen = []

    def watcher(facts):
        seen.append((facts["tool"], facts["taint"], facts["arguments"].get("key"), facts["origin"]))
        facts["arguments"]["key"] = "tampered"  # a private copy: the call is unaffected
        return "BLOCK" if facts["tool"] == "memory_delete" else None

    policy = Policy(hooks=[(HookPoint.PRE_TOOL_CALL, watcher)])
    s = store.session()
    assert json.loads(execute(s, "memory_save", {"key": "k", "content": "v"}, policy=policy, origin="slack"))[
        "saved"
    ]
    assert s.get("k") is not None and s.get("tampered") is None
    assert code(execute(s, "memory_delete", {"key": "k"}, policy=policy)) == "POLICY_BLOCKED"
    assert seen[0] == ("memory_save", Level.PUBLIC, "k", "slack")


def test_a_hook_returning_a_decision(store):
    policy = Policy(hooks=[(HookPoint.PRE_TOOL_CALL, lambda f: Decision(Action.BLOCK, message="not today"))])
    text = execute(store.session(), "memory_list", {}, policy=policy)
    assert json.loads(text)["error"] == {"code": "POLICY_BLOCKED", "message": "not today"}


def test_a_hook_returning_garbage_blocks(store):
    policy = Policy(hooks=[(HookPoint.PRE_TOOL_CALL, lambda f: 42)])
    assert code(execute(store.session(), "memory_list", {}, policy=policy)) == "POLICY_BLOCKED"


# rules through the executor ----------------------------------------------------------------

RULES = rules_from_yaml(
    """
    - id: no-write-down
      priority: 100
      hook: PRE_TOOL_CALL
      conditions: [{field: write_down_violation, operator: equals, value: true}]
      action: BLOCK
      message: you asked to store below the session's level
    - id: approve-deletes
      priority: 50
      hook: PRE_TOOL_CALL
      conditions: [{field: tool, operator: equals, value: memory_delete}]
      action: REQUIRE_APPROVAL
      message: deleting needs a human
    - id: dates
      hook: POST_TOOL_RESPONSE
      conditions: [{field: response, operator: matches, value: '\\d{4}-\\d{2}-\\d{2}(?!T)'}]
      action: REDACT
    - id: scrub-ssn-before-storing
      hook: PRE_TOOL_CALL
      conditions: [{field: content, operator: matches, value: '\\d{3}-\\d{2}-\\d{4}'}]
      action: REDACT
    """
)


def test_write_down_attempts_can_be_blocked_by_rule(store):
    s = store.session()
    s.escalate(Level.CONFIDENTIAL, "x")
    policy = Policy(RULES)
    text = execute(s, "memory_save", {"key": "k", "content": "v", "classification": "public"}, policy=policy)
    assert json.loads(text)["error"]["message"] == "you asked to store below the session's level"
    ok = execute(
        s, "memory_save", {"key": "k", "content": "v", "classification": "RESTRICTED"}, policy=policy
    )
    assert json.loads(ok)["classification"] == "CONFIDENTIAL"


def test_require_approval_defaults_to_deny(store):
    s = store.session()
    s.save("k", "v")
    text = execute(s, "memory_delete", {"key": "k"}, policy=Policy(RULES))
    assert code(text) == "POLICY_BLOCKED" and "deleting needs a human" in text
    assert s.get("k") is not None
    assert decisions(store)[-1].detail["approval"] == "denied"


def test_require_approval_asks_the_approver(store):
    asked = []

    def approver(request):
        asked.append((request.hook, request.rule_id, request.facts["arguments"]["key"]))
        return True

    s = store.session()
    s.save("k", "v")
    assert json.loads(execute(s, "memory_delete", {"key": "k"}, policy=Policy(RULES, approver=approver)))[
        "deleted"
    ]
    assert asked == [(HookPoint.PRE_TOOL_CALL, "approve-deletes", "k")]
    assert decisions(store)[-2].detail["approval"] == "granted"


def test_an_approver_that_fails_denies(store):
    def broken(request):
        raise ValueError("no")

    s = store.session()
    s.save("k", "v")
    assert (
        code(execute(s, "memory_delete", {"key": "k"}, policy=Policy(RULES, approver=broken)))
        == "POLICY_BLOCKED"
    )
    assert decisions(store)[-1].detail["approval"] == "error"


def test_redact_in_json_responses_keeps_valid_json(store):
    s = store.session()
    s.save("deal", SECRET_CONTENT)
    text = execute(s, "memory_get", {"key": "deal"}, policy=Policy(RULES))
    data = json.loads(text)
    assert data["content"] == "the merger with Initech closes on [REDACTED]"
    assert data["updated_at"].startswith("2026-01-01T")  # only content fields are edited


def test_redact_in_plain_text_responses(store):
    s = store.session()
    s.save("deal", SECRET_CONTENT)
    text = execute(s, "memory_recall", {"query": "merger"}, policy=Policy(RULES))
    assert text == "Found 1 memories:\n- [core] deal: the merger with Initech closes on [REDACTED] [100%]"


def test_redact_before_the_call_changes_what_is_stored(store):
    s = store.session()
    execute(s, "memory_save", {"key": "id", "content": "ssn 123-45-6789 on file"}, policy=Policy(RULES))
    assert s.get("id").content == "ssn [REDACTED] on file"


def test_rule_without_patterns_redacts_everything(store):
    rules = rules_from_yaml("- {id: all, hook: POST_TOOL_RESPONSE, action: REDACT}")
    s = store.session()
    s.save("a", "alpha")
    data = json.loads(execute(s, "memory_list", {}, policy=Policy(rules)))
    assert data["memories"][0]["content"] == "[REDACTED]" and data["memories"][0]["key"] == "a"


def test_rules_can_use_taint_and_channel(store):
    rules = rules_from_yaml(
        "- {id: lock, hook: PRE_TOOL_CALL, action: BLOCK, conditions: "
        "[{field: taint, operator: gte, value: INTERNAL}, {field: channel, operator: equals, value: public-web}]}"
    )
    s = store.session()
    assert "saved" in execute(
        s, "memory_save", {"key": "a", "content": "b"}, policy=Policy(rules), channel="public-web"
    )
    s.escalate(Level.INTERNAL, "x")
    assert (
        code(execute(s, "memory_get", {"key": "a"}, policy=Policy(rules), channel="public-web"))
        == "POLICY_BLOCKED"
    )
    assert "found" in execute(s, "memory_get", {"key": "a"}, policy=Policy(rules), channel="desk")


# audit ---------------------------------------------------------------------------------------


def test_every_decision_is_audited_without_content(store):
    s = store.session()
    policy = Policy(RULES)
    execute(s, "memory_save", {"key": "deal", "content": SECRET_CONTENT}, policy=policy)
    execute(s, "memory_get", {"key": "deal"}, policy=policy)
    execute(s, "memory_delete", {"key": "deal"}, policy=policy)
    events = decisions(store)
    assert [(e.detail["hook"], e.detail["action"], e.detail["rule_id"]) for e in events] == [
        ("PRE_TOOL_CALL", "ALLOW", None),
        ("POST_TOOL_RESPONSE", "ALLOW", None),
        ("PRE_TOOL_CALL", "ALLOW", None),
        ("POST_TOOL_RESPONSE", "REDACT", "dates"),
        ("PRE_TOOL_CALL", "BLOCK", "approve-deletes"),
    ]
    assert all(e.session_id == s.id and e.agent_id == "main" for e in events)
    dumped = json.dumps([e.detail for e in store.audit_events()])
    assert "Initech" not in dumped and "merger" not in dumped


def test_policy_is_immutable_and_replace_copies():
    base = Policy(RULES)
    ro = base.replace(read_only=True)
    assert ro.read_only and not base.read_only and ro.rules == base.rules
    with pytest.raises(ValueError):
        Policy(timeout=0)


# PRE_OUTPUT -----------------------------------------------------------------------------------


def test_output_below_the_taint_is_blocked(store):
    s = store.session()
    s.escalate(Level.CONFIDENTIAL, "x")
    policy = Policy()
    blocked = policy.check_output(s, "summary", channel_level=Level.PUBLIC, channel="public-slack")
    assert not blocked.allowed and blocked.text is None and blocked.decision.rule_id == "write_down"
    assert policy.check_output(s, "summary", channel_level="confidential").allowed
    assert policy.check_output(s, "summary", channel_level=Level.RESTRICTED).text == "summary"
    last = decisions(store)[-3]
    assert last.detail["hook"] == "PRE_OUTPUT" and last.detail["channel_level"] == "PUBLIC"
    assert last.outcome == "blocked"


def test_output_rules_cannot_lift_the_write_down_block(store):
    rules = rules_from_yaml("- {id: yolo, priority: 999, hook: PRE_OUTPUT, action: ALLOW}")
    s = store.session()
    s.escalate(Level.INTERNAL, "x")
    assert not Policy(rules).check_output(s, "x", channel_level=Level.PUBLIC).allowed


def test_output_redaction(store):
    rules = rules_from_yaml(
        "- {id: emails, hook: PRE_OUTPUT, action: REDACT, conditions: "
        "[{field: content, operator: matches, value: '[\\w.]+@[\\w.]+'}]}"
    )
    check = Policy(rules).check_output(
        store.session(), "mail ada@example.com now", channel_level=Level.PUBLIC
    )
    assert check.allowed and check.text == "mail [REDACTED] now"


# PRE_CONTEXT_INJECTION -----------------------------------------------------------------------


def test_context_injection_filters_and_redacts(store):
    from stratamem.policy import QUARANTINE_TAG

    high = store.session()
    high.escalate(Level.RESTRICTED, "x")
    above = high.save("top", "restricted thing")
    s = store.session()
    clean = s.save("a", "call 555-1234")
    hidden = s.save("b", "drop me")
    poisoned = s.save("c", "quarantined", tags=[QUARANTINE_TAG])
    rules = rules_from_yaml(
        """
        - {id: drop-b, hook: PRE_CONTEXT_INJECTION, action: BLOCK,
           conditions: [{field: key, operator: equals, value: b}]}
        - {id: phones, hook: PRE_CONTEXT_INJECTION, action: REDACT,
           conditions: [{field: content, operator: matches, value: '\\d{3}-\\d{4}'}]}
        """
    )
    injected = Policy(rules).prepare_context(s, [clean, hidden, poisoned, above])
    assert [(m.key, m.content) for m in injected] == [("a", "call [REDACTED]")]
    event = decisions(store)[-1]
    assert event.detail["hook"] == "PRE_CONTEXT_INJECTION"
    assert event.detail["injected"] == 1 and event.detail["withheld"] == 1
    assert event.lineage_ids == (clean.lineage_id,)
    assert "555" not in json.dumps(event.detail)


def test_context_injection_without_rules_keeps_visible_memories(store):
    s = store.session()
    memories = [s.save("a", "x"), s.save("b", "y")]
    assert Policy().prepare_context(s, memories) == memories


def test_context_injection_times_out_to_nothing(store):
    def slow(facts):
        time.sleep(0.5)

    s = store.session()
    memories = [s.save("a", "x")]
    policy = Policy(hooks=[(HookPoint.PRE_CONTEXT_INJECTION, slow)], timeout=0.05)
    assert policy.prepare_context(s, memories) == []


def test_context_injection_drops_agents_outside_own_and_peers(store):
    stranger = store.session(agent_id="stranger").save("x", "not yours")
    peer_memory = store.session(agent_id="peer").save("p", "shared")
    s = store.session(agent_id="main", peers=("peer",))
    assert Policy().prepare_context(s, [stranger, peer_memory]) == [peer_memory]


def test_output_text_must_be_a_string(store):
    import stratamem as sm

    with pytest.raises(sm.ValidationError):
        Policy().check_output(store.session(), None, channel_level=Level.PUBLIC)
