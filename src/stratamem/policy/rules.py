"""Choosing the rule that decides: highest priority first, first full match wins.

Pure: the same rules and facts always give the same decision, which is what
makes an operator's rule file testable on its own. Errors inside a rule
become a BLOCK naming the rule (fail closed), never an exception.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .conditions import holds
from .model import ALLOW, Action, Decision, HookPoint, Operator, Rule


def ordered(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    """Highest priority first; equal priorities keep the order they were given in."""
    return tuple(sorted(rules, key=lambda r: -r.priority))


def decision_for(rule: Rule) -> Decision:
    """The decision a matching rule gives, with what a REDACT must remove."""
    patterns = tuple(
        c.value for c in rule.conditions if c.operator is Operator.MATCHES and isinstance(c.value, str)
    )
    literals = tuple(
        c.value for c in rule.conditions if c.operator is Operator.CONTAINS and isinstance(c.value, str)
    )
    return Decision(rule.action, rule.id, rule.message, "rule", patterns, literals)


def first_match(rules: Sequence[Rule], hook: HookPoint, facts: Mapping[str, object]) -> Decision:
    """The first rule for ``hook`` (in priority order) whose conditions all hold; ALLOW if none.

    ``rules`` must already be in priority order (see :func:`ordered`).
    """
    for rule in rules:
        if rule.hook is not hook:
            continue
        try:
            matched = all(holds(condition, facts) for condition in rule.conditions)
        except Exception as exc:  # noqa: BLE001 - any failure of a rule blocks
            return Decision(
                Action.BLOCK,
                rule.id,
                f"policy rule {rule.id!r} could not be evaluated; blocked",
                "error",
                detail={"error": type(exc).__name__},
            )
        if matched:
            return decision_for(rule)
    return ALLOW
