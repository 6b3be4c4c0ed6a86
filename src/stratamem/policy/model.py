"""The vocabulary of the policy layer: hook points, actions, rules and decisions.

Plain frozen data, so rules can be loaded, compared, logged and evaluated by
pure functions, and a decision can cross a thread boundary (hook timeouts)
without anyone mutating it on the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Self

from ..errors import ValidationError


class RuleWord(StrEnum):
    """A word of a rules file (hook, action, operator), parsed in any case and with surrounding spaces.

    Every member is named as its value upper-cased, so one lookup by name serves
    all of them; a refusal names the kind (the class keyword ``what``) and lists
    the values as a rules file writes them.
    """

    _what: ClassVar[str]

    def __init_subclass__(cls, *, what: str = "value", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._what = what

    @classmethod
    def parse(cls, value: object) -> Self:
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value.strip().upper() in cls.__members__:
            return cls[value.strip().upper()]
        valid = ", ".join(m.value for m in cls)
        raise ValidationError(f"unknown {cls._what} {value!r}; valid {cls._what}s are {valid}")


class HookPoint(RuleWord, what="hook"):
    """Where in a turn the policy is asked."""

    PRE_TOOL_CALL = "PRE_TOOL_CALL"  # a tool call, before it runs
    POST_TOOL_RESPONSE = "POST_TOOL_RESPONSE"  # a tool's answer, before the model sees it
    PRE_CONTEXT_INJECTION = "PRE_CONTEXT_INJECTION"  # memories, before they enter the prompt
    PRE_OUTPUT = "PRE_OUTPUT"  # text, before it leaves for a channel


class Action(RuleWord, what="action"):
    ALLOW = "ALLOW"
    BLOCK = "BLOCK"
    REDACT = "REDACT"
    REQUIRE_APPROVAL = "REQUIRE_APPROVAL"


class Operator(RuleWord, what="operator"):
    EQUALS = "equals"
    NOT_EQUALS = "not_equals"
    GT = "gt"
    LT = "lt"
    GTE = "gte"
    LTE = "lte"
    CONTAINS = "contains"
    MATCHES = "matches"


@dataclass(frozen=True, slots=True)
class Condition:
    """``field operator value``; ``field`` is a dotted path into the facts (``arguments.key``)."""

    field: str
    operator: Operator
    value: object


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    hook: HookPoint
    action: Action
    conditions: tuple[Condition, ...] = ()
    priority: int = 0
    message: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    """What the policy said, who said it and why.

    ``source`` is ``"rule"``, ``"hook"``, ``"default"`` or a built-in guard
    (``"read_only"``, ``"scanner"``, ``"write_down"``, ``"error"``,
    ``"timeout"``, ``"approval"``). ``patterns`` are the regexes (or literal
    strings) a REDACT decision removes; empty means redact the whole text.
    """

    action: Action
    rule_id: str | None = None
    message: str = ""
    source: str = "default"
    patterns: tuple[str, ...] = ()
    literals: tuple[str, ...] = ()
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def blocked(self) -> bool:
        return self.action is Action.BLOCK

    @property
    def allowed(self) -> bool:
        return self.action is not Action.BLOCK


ALLOW = Decision(Action.ALLOW)
