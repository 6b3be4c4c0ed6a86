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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ...audit import AuditDraft
from ...levels import Level
from .dialect import Dialect
from .rows import from_us

if TYPE_CHECKING:
    from ..records import SessionRecord

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
    """One range of a transcript and how many messages the reader may see in all.

    ``last_id`` is the newest visible row id (0: none); with ``delta`` the
    page holds only the messages after the :class:`TailMark` the reader
    passed, which it already holds (``turn.tail_cache``).
    """

    messages: tuple[TranscriptMessage, ...]
    total: int
    last_id: int = 0
    delta: bool = False


# What a read of a transcript the caller may not name returns (another principal's, or none at all: the
# server cannot tell them apart, so neither can the caller): nothing, audited like any other read.
UNNAMED = TranscriptPage((), 0)


@dataclass(frozen=True, slots=True)
class TailMark:
    """What a reader already holds of its own transcript: how many visible messages, the newest row id.

    Rows are never edited and ids only grow, so when both still hold, the
    messages after ``last_id`` are all that changed (another process may
    append); anything else (a purge, a taint that reveals more) reads the
    whole window again.
    """

    total: int
    last_id: int


Query = Callable[[str, tuple[object, ...]], Sequence[Sequence[Any]]]


def tail_rows(
    query: Query, dialect: Dialect, scope: tuple[object, ...], limit: int, since: TailMark | None
) -> tuple[Sequence[Sequence[Any]], int, int, int, bool]:
    """The last ``limit`` visible messages of ``scope`` (transcript, agent, taint), or those after ``since``.

    Returns raw rows, the first one's position, the visible total, the newest
    id and whether the rows are a delta. Both backends run it inside their
    own transaction with their dialect.
    """
    ph = dialect.positional
    where = f"FROM turn_messages WHERE session_id = {ph} AND agent_id = {ph} AND level <= {ph}"
    total, last = query(f"SELECT count(*), coalesce(max(id), 0) {where}", scope)[0]
    total, last = int(total), int(last)
    if since is not None and total >= since.total and last >= since.last_id and total - since.total <= limit:
        new = total - since.total
        rows = (
            []
            if new == 0
            else query(
                f"SELECT {MESSAGE_COLUMNS} {where} AND id > {ph} ORDER BY id LIMIT {ph}",
                (*scope, since.last_id, new + 1),
            )
        )
        if len(rows) == new and (rows[-1][0] == last if rows else last == since.last_id):
            return rows, since.total, total, last, True
    first = max(0, total - limit)
    rows = query(
        f"SELECT {MESSAGE_COLUMNS} {where} ORDER BY id LIMIT {ph} OFFSET {ph}", (*scope, limit, first)
    )
    return rows, first, total, last, False


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


def range_rows(
    query: Query, dialect: Dialect, scope: tuple[object, ...], start: int, limit: int
) -> tuple[Sequence[Sequence[Any]], int]:
    """Visible positions ``start .. start+limit`` of ``scope`` (transcript, agent, taint) and the visible total."""
    ph = dialect.positional
    where = f"FROM turn_messages WHERE session_id = {ph} AND agent_id = {ph} AND level <= {ph}"
    (total,) = query(f"SELECT count(*) {where}", scope)[0]
    rows = query(
        f"SELECT {MESSAGE_COLUMNS} {where} ORDER BY id LIMIT {ph} OFFSET {ph}", (*scope, limit, start)
    )
    return rows, int(total)


def append_draft(record: SessionRecord, drafts: Sequence[MessageDraft]) -> AuditDraft:
    """The ``transcript.append`` audit event: how many messages and their roles, never content."""
    return AuditDraft(
        "transcript.append",
        record.id,
        record.agent_id,
        record.taint,
        levels=(record.taint,),
        detail={"count": len(drafts), "roles": [d.role for d in drafts]},
    )


def read_draft(
    record: SessionRecord, page: TranscriptPage, limit: int, *, own: bool, start: int | None = None
) -> AuditDraft:
    """The ``transcript.read`` audit event of a page (counts only): the window served, never content."""
    first = max(0, page.total - limit) if start is None else start
    count = min(limit, page.total) if start is None else len(page.messages)
    return AuditDraft(
        "transcript.read",
        record.id,
        record.agent_id,
        record.taint,
        detail={"count": count, "start": first, "own": own},
    )
