"""Transcript messages and usage records as both backends store them.

The turn layer's data lives in the store, beside memories and under the same
lattice: each row carries the level (the writing session's live taint, read
inside the writing transaction) and the agent. One encoding for both backends
(integer microseconds, JSON text for tool calls, money as exact decimal text)
so ``dump`` rows move between backends unchanged.

Positions. A reader's position numbers are ranks over the messages *it* may
see (own agent, level <= taint, oldest first), never row ids: a row id would
reveal how many messages the reader cannot see.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from ..levels import Level
from .rows import from_us

MESSAGE_COLUMNS = (
    "id, session_id, agent_id, level, role, content, tool_calls, tool_call_id, origin, created_us"
)
USAGE_COLUMNS = (
    "id, session_id, agent_id, level, model, input_tokens, output_tokens, cached_input_tokens, "
    "cost_usd, at_us"
)
# Rows dumped for migration: every column, ids included, so order and identity survive.
COPIED = {"turn_messages": MESSAGE_COLUMNS, "turn_usage": USAGE_COLUMNS}


@dataclass(frozen=True, slots=True)
class MessageDraft:
    """A message before the store labels it with the session's taint and agent."""

    role: str
    content: str
    tool_calls: str = "[]"  # JSON list of {"id", "name", "arguments"}
    tool_call_id: str | None = None
    origin: str | None = None  # set on the user message that opens a turn


@dataclass(frozen=True, slots=True)
class TranscriptMessage:
    """A stored message: ``position`` is its rank in what the reader may see."""

    position: int
    session_id: str
    agent_id: str
    level: Level
    role: str
    content: str
    tool_calls: str
    tool_call_id: str | None
    origin: str | None
    created_at: datetime
    row_id: int = 0  # for the writer's own bookkeeping (turn ids); never shown across levels

    def to_dict(self) -> dict[str, Any]:
        """The export line (``"record": "message"``) and the REST shape."""
        return {
            "record": "message",
            "position": self.position,
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "level": self.level.name,
            "role": self.role,
            "content": self.content,
            "tool_calls": json.loads(self.tool_calls),
            "tool_call_id": self.tool_call_id,
            "origin": self.origin,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class TranscriptPage:
    """One range of a transcript and how many messages the reader may see in all."""

    messages: tuple[TranscriptMessage, ...]
    total: int


@dataclass(frozen=True, slots=True)
class UsageDraft:
    model: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost_usd: Decimal


@dataclass(frozen=True, slots=True)
class UsageRecord:
    session_id: str
    agent_id: str
    level: Level
    model: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost_usd: Decimal
    time: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": "usage",
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "level": self.level.name,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cost_usd": str(self.cost_usd),
            "time": self.time.isoformat(),
        }


def row_to_message(row: Sequence[Any], position: int) -> TranscriptMessage:
    """``MESSAGE_COLUMNS`` (text fields already decoded) to a message at ``position``."""
    row_id, session, agent, level, role, content, calls, call_id, origin, created = row
    return TranscriptMessage(
        position,
        session,
        agent,
        Level(level),
        role,
        content,
        calls,
        call_id,
        origin,
        from_us(created),
        row_id,
    )


def positioned(rows: Iterable[Sequence[Any]]) -> Iterator[TranscriptMessage]:
    """Export order (by row id) to messages numbered per transcript, as its own session sees it."""
    positions: dict[str, int] = {}
    for row in rows:
        position = positions.get(row[1], 0)
        positions[row[1]] = position + 1
        yield row_to_message(row, position)


def row_to_usage(row: Sequence[Any]) -> UsageRecord:
    _id, session, agent, level, model, fresh, output, cached, cost, at = row
    return UsageRecord(session, agent, Level(level), model, fresh, output, cached, Decimal(cost), from_us(at))


def sum_costs(values: Sequence[str]) -> Decimal:
    """Exact sum of stored decimal texts."""
    return sum((Decimal(v) for v in values), Decimal(0))
