"""Reading operator rules from YAML (or JSON, or plain dicts) into ``Rule`` values.

Everything is checked at load time — unknown hooks, actions and operators,
regexes that do not compile, duplicate ids — so a broken rule file fails when
the operator loads it, not in the middle of an agent's turn.

YAML needs PyYAML (``pip install stratamem[policy]``); JSON needs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..strict_json import JsonRefused, read_json
from .model import Action, Condition, HookPoint, Operator, Rule

RULE_FIELDS = frozenset({"id", "priority", "hook", "conditions", "action", "message"})
CONDITION_FIELDS = frozenset({"field", "operator", "value"})


def condition_from_dict(data: object, rule_id: str) -> Condition:
    if not isinstance(data, Mapping):
        raise ValidationError(f"rule {rule_id!r}: each condition must be a mapping of field, operator, value")
    unknown = set(data) - CONDITION_FIELDS
    if unknown:
        raise ValidationError(f"rule {rule_id!r}: unknown condition keys {sorted(map(str, unknown))}")
    field = data.get("field")
    if not isinstance(field, str) or not field.strip():
        raise ValidationError(f"rule {rule_id!r}: condition field must be a non-empty string")
    if "value" not in data:
        raise ValidationError(f"rule {rule_id!r}: condition on {field!r} has no value")
    operator = Operator.parse(data.get("operator"))
    value = data["value"]
    if operator is Operator.MATCHES:
        if not isinstance(value, str):
            raise ValidationError(f"rule {rule_id!r}: 'matches' needs a regular expression string")
        try:
            re.compile(value)
        except re.error as exc:
            raise ValidationError(f"rule {rule_id!r}: invalid regular expression: {exc}") from None
    return Condition(field.strip(), operator, value)


def rule_from_dict(data: object) -> Rule:
    if not isinstance(data, Mapping):
        raise ValidationError("each rule must be a mapping")
    rule_id = data.get("id")
    if not isinstance(rule_id, str) or not rule_id.strip():
        raise ValidationError("each rule needs a non-empty string id")
    unknown = set(data) - RULE_FIELDS
    if unknown:
        raise ValidationError(f"rule {rule_id!r}: unknown keys {sorted(map(str, unknown))}")
    priority = data.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ValidationError(f"rule {rule_id!r}: priority must be an integer")
    conditions = data.get("conditions") or []
    if not isinstance(conditions, list):
        raise ValidationError(f"rule {rule_id!r}: conditions must be a list")
    message = data.get("message") or ""
    if not isinstance(message, str):
        raise ValidationError(f"rule {rule_id!r}: message must be a string")
    if "hook" not in data or "action" not in data:
        raise ValidationError(f"rule {rule_id!r}: hook and action are required")
    return Rule(
        id=rule_id,
        hook=HookPoint.parse(data["hook"]),
        action=Action.parse(data["action"]),
        conditions=tuple(condition_from_dict(c, rule_id) for c in conditions),
        priority=priority,
        message=message,
    )


def rules_from_data(data: object) -> list[Rule]:
    """A list of rule mappings, or a mapping with a ``rules`` list; ``None`` means no rules."""
    if data is None:
        return []
    if isinstance(data, Mapping):
        if set(data) - {"rules"}:
            raise ValidationError("a rule document is a list of rules or a mapping with one key, 'rules'")
        data = data.get("rules") or []
    if not isinstance(data, list):
        raise ValidationError("rules must be a list")
    rules = [rule_from_dict(item) for item in data]
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            raise ValidationError(f"duplicate rule id {rule.id!r}")
        seen.add(rule.id)
    return rules


def rules_from_yaml(text: str) -> list[Rule]:
    try:
        import yaml
    except ImportError:  # pragma: no cover - depends on the install
        raise ValidationError("YAML rules need PyYAML: pip install 'stratamem[policy]'") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValidationError(f"rules are not valid YAML: {exc}") from None
    return rules_from_data(data)


def load_rules(source: str | Path | Iterable[Mapping[str, Any]]) -> list[Rule]:
    """Rules from a ``.yaml``/``.yml``/``.json`` file path, or already-parsed mappings."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValidationError(f"cannot read rules from {path}: {exc.strerror}") from None
        if path.suffix.lower() == ".json":
            try:
                data = read_json(text)  # a repeated key would silently drop one of two rule fields
            except JsonRefused as exc:
                raise exc.located(f"rules file {path}") from None
            return rules_from_data(data)
        return rules_from_yaml(text)
    return rules_from_data(list(source))
