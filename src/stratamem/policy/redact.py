"""Removing what a REDACT decision matched, from text or from a JSON shape.

Pure functions. A REDACT rule removes what its ``matches`` (regex) and
``contains`` (literal) conditions describe; a rule with neither redacts the
whole text, because the operator asked for redaction without saying of what.
In JSON shapes only the named content fields change, so the answer stays
valid and its keys, levels and times stay truthful.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .conditions import compiled
from .model import Decision

REDACTED = "[REDACTED]"
CONTENT_FIELDS = ("content",)


def redact_text(text: str, decision: Decision) -> str:
    if not decision.patterns and not decision.literals:
        return REDACTED
    for pattern in decision.patterns:
        text = compiled(pattern).sub(REDACTED, text)
    for literal in decision.literals:
        if literal:
            text = text.replace(literal, REDACTED)
    return text


def redact_fields(value: Any, decision: Decision, fields: Iterable[str] = CONTENT_FIELDS) -> Any:
    """A copy of a JSON-like value with every string under one of ``fields`` redacted."""
    names = frozenset(fields)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: redact_text(v, decision) if k in names and isinstance(v, str) else walk(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(value)


__all__ = ["REDACTED", "redact_fields", "redact_text"]
