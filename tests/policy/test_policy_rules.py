"""Rules as data: operators, dotted fields, first match by priority, fail-closed errors, loading."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st
from policy_support import call_facts

import stratamem as sm
from stratamem import Level
from stratamem.policy import (
    Action,
    Condition,
    HookPoint,
    Operator,
    Rule,
    first_match,
    load_rules,
    rules_from_yaml,
)
from stratamem.policy.conditions import MISSING, holds, resolve
from stratamem.policy.rules import ordered

PRE = HookPoint.PRE_TOOL_CALL


def cond(field, operator, value):
    return Condition(field, Operator.parse(operator), value)


@pytest.mark.parametrize(
    ("field", "operator", "value", "expected"),
    [
        ("tool", "equals", "memory_save", True),
        ("tool", "equals", "memory_get", False),
        ("tool", "not_equals", "memory_get", True),
        ("arguments.key", "equals", "plan", True),
        ("arguments.tags.0", "equals", "work", True),
        ("arguments.tags", "contains", "work", True),
        ("arguments.content", "contains", "merger", True),
        ("arguments.content", "matches", r"\bmerg\w+", True),
        ("arguments.content", "matches", r"^acquisition", False),
        ("taint", "equals", "confidential", True),
        ("taint", "gte", "INTERNAL", True),
        ("taint", "gt", "CONFIDENTIAL", False),
        ("taint", "lt", "RESTRICTED", True),
        ("taint", "lte", 2, True),
        ("taint_rank", "gte", 2, True),
        ("taint_rank", "equals", 2, True),
        ("agent_id", "equals", "main", True),
        ("origin", "equals", "cli", True),
        ("channel", "matches", "^ch", True),
        ("is_write", "equals", True, True),
        ("write_down_violation", "equals", True, True),
        ("requested_level", "equals", "PUBLIC", True),
        ("stripped_arguments", "contains", "classification", True),
        ("arguments.missing", "equals", "x", False),
        ("arguments.missing", "not_equals", "x", False),
        ("arguments.key.deeper", "equals", "x", False),
    ],
)
def test_operators_and_fields(field, operator, value, expected):
    facts = call_facts(
        "memory_save",
        Level.CONFIDENTIAL,
        key="plan",
        content="the merger closes in May",
        tags=["work"],
        classification="PUBLIC",
    )
    assert holds(cond(field, operator, value), facts) is expected


def test_flag_equality_is_not_rank_equality():
    facts = call_facts("memory_get", Level.INTERNAL, key="k")
    assert holds(cond("taint_rank", "equals", True), facts) is False


def test_resolve():
    assert resolve({"a": {"b": [1, {"c": 2}]}}, "a.b.1.c") == 2
    assert resolve({"a": [1]}, "a.5") is MISSING
    assert resolve({"a": "text"}, "a.0") is MISSING


def rule(rule_id, priority, action="BLOCK", conditions=(), hook=PRE):
    return Rule(rule_id, hook, Action.parse(action), tuple(conditions), priority, f"by {rule_id}")


def test_highest_priority_first_and_first_match_wins():
    facts = call_facts("memory_save", key="plan", content="x")
    rules = ordered(
        [
            rule("low-block", 1, "BLOCK"),
            rule("high-allow", 10, "ALLOW", [cond("arguments.key", "equals", "plan")]),
            rule("high-miss", 20, "BLOCK", [cond("arguments.key", "equals", "other")]),
            rule("mid-redact", 5, "REDACT"),
        ]
    )
    decision = first_match(rules, PRE, facts)
    assert decision.action is Action.ALLOW and decision.rule_id == "high-allow"


def test_equal_priorities_keep_file_order():
    facts = call_facts()
    decision = first_match(ordered([rule("first", 1, "REDACT"), rule("second", 1, "BLOCK")]), PRE, facts)
    assert decision.rule_id == "first"


def test_default_is_allow_and_hooks_are_separate():
    facts = call_facts()
    assert first_match((), PRE, facts).action is Action.ALLOW
    other_hook = rule("post-only", 1, hook=HookPoint.POST_TOOL_RESPONSE)
    assert first_match((other_hook,), PRE, facts).action is Action.ALLOW


@pytest.mark.parametrize(
    "bad",
    [
        cond("arguments.key", "gt", 5),  # a word compared with a number
        cond("is_write", "contains", "x"),  # a flag has no members
        cond("arguments.tags", "matches", ["not a pattern"]),
        cond("arguments.content", "matches", "("),  # built in code, so never checked by the loader
    ],
)
def test_a_rule_that_errors_blocks(bad):
    facts = call_facts(key="plan", content="x", tags=["a"])
    decision = first_match((rule("broken", 100, "ALLOW", [bad]), rule("later", 1, "ALLOW")), PRE, facts)
    assert decision.action is Action.BLOCK
    assert decision.rule_id == "broken" and decision.source == "error"


def test_redact_decision_carries_what_to_remove():
    facts = call_facts(content="call 555-1234 now")
    r = rule(
        "phones",
        1,
        "REDACT",
        [cond("content", "matches", r"\d{3}-\d{4}"), cond("content", "contains", "call")],
    )
    decision = first_match((r,), PRE, facts)
    assert decision.patterns == (r"\d{3}-\d{4}",) and decision.literals == ("call",)


YAML = textwrap.dedent(
    """
    rules:
      - id: allow-notes
        priority: 50
        hook: pre_tool_call
        conditions:
          - {field: arguments.key, operator: matches, value: "^note-"}
        action: ALLOW
      - id: no-confidential-saves
        priority: 10
        hook: PRE_TOOL_CALL
        conditions:
          - {field: tool, operator: equals, value: memory_save}
          - {field: taint, operator: gte, value: CONFIDENTIAL}
        action: BLOCK
        message: confidential sessions may not save
      - id: ssn
        hook: POST_TOOL_RESPONSE
        conditions:
          - {field: response, operator: matches, value: '\\d{3}-\\d{2}-\\d{4}'}
        action: REDACT
    """
)


def test_yaml_rules_load_and_decide_by_priority():
    rules = ordered(rules_from_yaml(YAML))
    assert [r.id for r in rules] == ["allow-notes", "no-confidential-saves", "ssn"]
    assert rules[0].hook is PRE and rules[2].hook is HookPoint.POST_TOOL_RESPONSE
    confidential = Level.CONFIDENTIAL
    assert (
        first_match(rules, PRE, call_facts("memory_save", confidential, key="note-1", content="x")).rule_id
        == "allow-notes"
    )
    blocked = first_match(rules, PRE, call_facts("memory_save", confidential, key="plan", content="x"))
    assert blocked.action is Action.BLOCK and blocked.message == "confidential sessions may not save"
    assert (
        first_match(rules, PRE, call_facts("memory_save", Level.INTERNAL, key="plan", content="x")).action
        is Action.ALLOW
    )


def test_rule_files(tmp_path):
    (tmp_path / "rules.yaml").write_text(YAML)
    (tmp_path / "rules.json").write_text('[{"id": "j", "hook": "PRE_OUTPUT", "action": "BLOCK"}]')
    assert [r.id for r in load_rules(tmp_path / "rules.yaml")] == [
        "allow-notes",
        "no-confidential-saves",
        "ssn",
    ]
    assert load_rules(str(tmp_path / "rules.json"))[0].hook is HookPoint.PRE_OUTPUT
    assert load_rules([{"id": "d", "hook": "PRE_OUTPUT", "action": "allow"}])[0].action is Action.ALLOW
    assert rules_from_yaml("") == []
    with pytest.raises(sm.ValidationError):
        load_rules(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    "text",
    [
        "- {id: a, hook: NOWHERE, action: BLOCK}",
        "- {id: a, hook: PRE_OUTPUT, action: EXPLODE}",
        "- {id: a, hook: PRE_OUTPUT, action: BLOCK, conditions: [{field: x, operator: like, value: 1}]}",
        "- {id: a, hook: PRE_OUTPUT, action: BLOCK, conditions: [{field: x, operator: matches, value: '('}]}",
        "- {id: a, hook: PRE_OUTPUT, action: BLOCK, conditions: [{field: x, operator: equals}]}",
        "- {id: a, hook: PRE_OUTPUT, action: BLOCK, priority: high}",
        "- {id: a, hook: PRE_OUTPUT, action: BLOCK, colour: red}",
        "- {id: a, hook: PRE_OUTPUT, action: BLOCK}\n- {id: a, hook: PRE_OUTPUT, action: ALLOW}",
        "- {hook: PRE_OUTPUT, action: BLOCK}",
        "- {id: a, action: BLOCK}",
        "just a string",
        "rules: [\n  {id: a",
    ],
)
def test_broken_rule_files_fail_at_load(text):
    with pytest.raises(sm.ValidationError):
        rules_from_yaml(text)


@pytest.mark.parametrize(
    ("kind", "what", "spelled"),
    [(HookPoint, "hook", str.lower), (Action, "action", str.lower), (Operator, "operator", str.upper)],
)
def test_rule_words_parse_in_any_case_and_name_their_values(kind, what, spelled):
    for member in kind:
        assert kind.parse(f"  {spelled(member.value)} ") is member
        assert kind.parse(member) is member
    with pytest.raises(sm.ValidationError) as refused:
        kind.parse("nope")
    assert str(refused.value) == (
        f"unknown {what} 'nope'; valid {what}s are {', '.join(m.value for m in kind)}"
    )


priorities = st.lists(st.tuples(st.integers(-5, 5), st.booleans()), min_size=0, max_size=8)


@given(priorities)
def test_first_match_is_the_highest_priority_matching_rule(spec):
    rules = [
        rule(f"r{i}", prio, "BLOCK", [cond("tool", "equals", "memory_save" if hit else "nope")])
        for i, (prio, hit) in enumerate(spec)
    ]
    matching = [(-prio, i) for i, (prio, hit) in enumerate(spec) if hit]
    expected = f"r{min(matching)[1]}" if matching else None
    assert first_match(ordered(rules), PRE, call_facts()).rule_id == expected


def test_write_down_is_computed_for_writes_only():
    assert call_facts("memory_save", Level.INTERNAL, key="k", content="c", level="public")[
        "write_down_violation"
    ]
    assert not call_facts("memory_save", Level.INTERNAL, key="k", content="c", level="restricted")[
        "write_down_violation"
    ]
    assert not call_facts("memory_save", Level.INTERNAL, key="k", content="c")["write_down_violation"]
    assert not call_facts("memory_get", Level.INTERNAL, key="k", classification="PUBLIC")[
        "write_down_violation"
    ]
