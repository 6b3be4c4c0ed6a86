"""JSON Lines for the turn's records: transcript messages and usage, beside memory lines.

A turn line carries ``"record": "message"`` or ``"record": "usage"`` (memory
lines carry no ``record`` field), levels by name, times in ISO 8601, money as
exact decimal text. Parsing validates every field as hostile input; a bad
line is reported by ``transfer.read_records`` with its line number and
nothing is imported.
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from ..errors import ValidationError
from ..labels import compartment_set
from ..levels import Level
from ..storage.sql.transcripts import TranscriptMessage, UsageRecord
from ..validation import check_agent_id, parse_time

RECORD_KINDS = ("message", "usage")
_ROLES = ("system", "user", "assistant", "tool")
MAX_LINE_TEXT = 1_000_000


def _text(data: dict[str, Any], name: str, *, optional: bool = False, limit: int = 256) -> str | None:
    value = data.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise ValidationError(f"{name} must be a string of at most {limit} characters")
    return value


def _count(data: dict[str, Any], name: str) -> int:
    value = data.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**12:
        raise ValidationError(f"{name} must be an integer in 0..10^12")
    return value


def _time(value: object, field: str) -> datetime:
    """The same ISO-time check as a memory line's (``transfer._time``): an offset is required."""
    return parse_time(value, field, naive_is_utc=False)


def _names(value: object) -> list[object]:
    """A line's ``compartments``: absent, or a list of names (checked by ``labels.compartment_set``)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError("compartments must be a list of names")
    return value


def parse_turn_record(data: dict[str, Any]) -> TranscriptMessage | UsageRecord:
    """One decoded line with a ``record`` field to a message or usage record."""
    kind = data.get("record")
    if kind not in RECORD_KINDS:
        raise ValidationError(f"record must be one of {', '.join(RECORD_KINDS)}")
    session_id = _text(data, "session_id") or ""
    agent = check_agent_id(data.get("agent_id"))
    level = Level.parse(data.get("level"))
    compartments = compartment_set(_names(data.get("compartments")))
    if kind == "usage":
        try:
            cost = Decimal(str(data.get("cost_usd")))
        except (InvalidOperation, ValueError):
            raise ValidationError("cost_usd must be a decimal number") from None
        if not cost.is_finite() or cost < 0:
            raise ValidationError("cost_usd must be a finite number >= 0")
        return UsageRecord(
            session_id,
            agent,
            level,
            _text(data, "model", limit=200) or "",
            _count(data, "input_tokens"),
            _count(data, "output_tokens"),
            _count(data, "cached_input_tokens"),
            cost,
            _time(data.get("time"), "time"),
            compartments=compartments,
        )
    role = data.get("role")
    if role not in _ROLES:
        raise ValidationError(f"role must be one of {', '.join(_ROLES)}")
    calls = data.get("tool_calls") or []
    if (
        not isinstance(calls, list)
        or len(calls) > 64
        or not all(
            isinstance(c, dict) and all(isinstance(c.get(k), str) for k in ("id", "name", "arguments"))
            for c in calls
        )
    ):
        raise ValidationError("tool_calls must be a list of {id, name, arguments} strings")
    return TranscriptMessage(
        position=0,
        session_id=session_id,
        agent_id=agent,
        level=level,
        role=role,
        content=_text(data, "content", limit=MAX_LINE_TEXT) or "",
        tool_calls=json.dumps(
            [{k: c[k] for k in ("id", "name", "arguments")} for c in calls], ensure_ascii=False
        ),
        tool_call_id=_text(data, "tool_call_id", optional=True),
        origin=_text(data, "origin", optional=True),
        created_at=_time(data.get("created_at"), "created_at"),
        compartments=compartments,
    )
