"""Evaluating one rule condition against the facts of a hook call.

Pure functions. A condition names a field by dotted path (``arguments.key``,
``taint``) and compares it with one operator. A field that is absent makes
the condition false, so a rule never fires on data it cannot see. A type
mismatch (``gt`` between a word and a number) raises: the caller turns that
into a BLOCK, because a rule that cannot be evaluated must not let things
through (fail closed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from ..levels import Level
from .model import Condition, Operator

MISSING = object()


def resolve(facts: Mapping[str, object], path: str) -> object:
    """The value at a dotted path, or ``MISSING``; list items by index (``arguments.tags.0``)."""
    value: object = facts
    for part in path.split("."):
        if isinstance(value, Mapping):
            if part not in value:
                return MISSING
            value = value[part]
        elif isinstance(value, Sequence) and not isinstance(value, str) and part.isdigit():
            index = int(part)
            if index >= len(value):
                return MISSING
            value = value[index]
        else:
            return MISSING
    return value


def _coerce(actual: object, expected: object) -> object:
    """Compare levels as levels: ``taint gte CONFIDENTIAL`` means the lattice order."""
    if isinstance(actual, Level) and not isinstance(expected, bool) and isinstance(expected, (str, int)):
        return Level.parse(expected) if isinstance(expected, str) else Level(expected)
    return expected


@lru_cache(maxsize=512)
def compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _as_text(value: object) -> str:
    if isinstance(value, Level):
        return value.name
    if isinstance(value, (str, int, float, bool)):
        return str(value)
    raise TypeError(f"cannot match a pattern against {type(value).__name__}")


def _matches(actual: object, pattern: object) -> bool:
    if not isinstance(pattern, str):
        raise TypeError("a 'matches' value must be a regular expression string")
    regex = compiled(pattern)
    if isinstance(actual, (list, tuple)):
        return any(regex.search(_as_text(item)) for item in actual)
    return regex.search(_as_text(actual)) is not None


def _contains(actual: object, expected: object) -> bool:
    if isinstance(actual, str):
        if not isinstance(expected, str):
            raise TypeError("a string can only contain a string")
        return expected in actual
    if isinstance(actual, Level):
        return str(expected) in actual.name
    if isinstance(actual, (list, tuple, set, frozenset, Mapping)):
        return expected in actual
    raise TypeError(f"'contains' does not apply to {type(actual).__name__}")


def _equals(actual: object, expected: object) -> bool:
    # YAML gives True for `true`; 1 == True in Python, which would make a rank match a flag.
    if isinstance(actual, bool) != isinstance(expected, bool):
        return False
    return actual == expected


OPERATIONS: dict[Operator, Callable[[object, object], bool]] = {
    Operator.EQUALS: _equals,
    Operator.NOT_EQUALS: lambda a, e: not _equals(a, e),
    Operator.GT: lambda a, e: a > e,  # type: ignore[operator]
    Operator.LT: lambda a, e: a < e,  # type: ignore[operator]
    Operator.GTE: lambda a, e: a >= e,  # type: ignore[operator]
    Operator.LTE: lambda a, e: a <= e,  # type: ignore[operator]
    Operator.CONTAINS: _contains,
    Operator.MATCHES: _matches,
}


def holds(condition: Condition, facts: Mapping[str, object]) -> bool:
    """Whether the condition is true of the facts; raises when it cannot be evaluated."""
    actual = resolve(facts, condition.field)
    if actual is MISSING:
        return False
    expected = _coerce(actual, condition.value)
    if actual is None and condition.operator not in (Operator.EQUALS, Operator.NOT_EQUALS):
        return False
    return bool(OPERATIONS[condition.operator](actual, expected))
