"""Transcript messages and usage records as both backends store them.

The turn layer's data lives in the store, beside memories and under the same
lattice: each row carries the label (the writing session's live taint as
storage keeps it, ``stratamem.labels``, read inside the writing transaction)
and the agent. One encoding for both backends
(integer microseconds, JSON text for tool calls, money as exact decimal text)
so ``dump`` rows move between backends unchanged.

Positions. A reader's position numbers are ranks over the messages *it* may
see (own agent, label within its taint, oldest first), never row ids: a row id would
reveal how many messages the reader cannot see.

The SQL of every turn operation is here once, as bodies that run inside a
backend's transaction (``storage/transaction.py``) and ask ``tx.dialect`` how
the engine spells a placeholder and stores free text (PostgreSQL escapes NUL);
``storage/turn_store.py`` runs them through the backend's seam.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ...audit import AuditDraft, operator_draft
from ...labels import level_of, visible_args, visible_sql
from ...levels import Level
from .dialect import Dialect
from .rows import from_us, to_us

if TYPE_CHECKING:
    from ..records import SessionRecord
    from ..transaction import Tx

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
    #: the label as stored (``stratamem.labels``; -1 given: the level alone) and its compartments' names
    #: (given by the store that names them: an export, an import line)
    label_code: int = -1
    compartments: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.label_code < 0:
            object.__setattr__(self, "label_code", int(self.level))

    def to_dict(self) -> dict[str, Any]:
        """The export line (``"record": "message"``) and the REST shape."""
        return _labelled(self.compartments) | {
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


def _labelled(compartments: frozenset[str]) -> dict[str, Any]:
    """A record's ``compartments`` field, only when it has any (lines of stores without them unchanged)."""
    return {"compartments": sorted(compartments)} if compartments else {}


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


def _visible(ph: str) -> str:
    """A message row's label within the reader's taint, bound positionally (``visible_args``)."""
    return visible_sql("level", ph, ph, ph)


def tail_rows(
    query: Query, dialect: Dialect, scope: tuple[object, ...], limit: int, since: TailMark | None
) -> tuple[Sequence[Sequence[Any]], int, int, int, bool]:
    """The last ``limit`` visible messages of ``scope`` (transcript, agent, taint), or those after ``since``.

    Returns raw rows, the first one's position, the visible total, the newest
    id and whether the rows are a delta. Both backends run it inside their
    own transaction with their dialect.
    """
    ph = dialect.positional
    where = f"FROM turn_messages WHERE session_id = {ph} AND agent_id = {ph} AND {_visible(ph)}"
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
    label_code: int = -1  # as ``TranscriptMessage``'s
    compartments: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.label_code < 0:
            object.__setattr__(self, "label_code", int(self.level))

    def to_dict(self) -> dict[str, Any]:
        return _labelled(self.compartments) | {
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
        level_of(level),
        role,
        content,
        calls,
        call_id,
        origin,
        from_us(created),
        row_id,
        int(level),
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
    return UsageRecord(
        session, agent, level_of(level), model, fresh, output, cached, Decimal(cost), from_us(at), int(level)
    )


def sum_costs(values: Sequence[str]) -> Decimal:
    """Exact sum of stored decimal texts."""
    return sum((Decimal(v) for v in values), Decimal(0))


def range_rows(
    query: Query, dialect: Dialect, scope: tuple[object, ...], start: int, limit: int
) -> tuple[Sequence[Sequence[Any]], int]:
    """Visible positions ``start .. start+limit`` of ``scope`` (transcript, agent, taint) and the visible total."""
    ph = dialect.positional
    where = f"FROM turn_messages WHERE session_id = {ph} AND agent_id = {ph} AND {_visible(ph)}"
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
        record.taint_code,
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
        record.taint_code,
        detail={"count": count, "start": first, "own": own},
    )


# ---------------------------------------------------------------------------- bodies: the SQL of each operation

_WHERE_VISIBLE = f"FROM turn_messages WHERE session_id = ? AND agent_id = ? AND {_visible('?')}"
_MESSAGE_INSERT = (
    f"INSERT INTO turn_messages ({MESSAGE_COLUMNS.removeprefix('id, ')}) VALUES (?,?,?,?,?,?,?,?,?)"
)
_USAGE_INSERT = f"INSERT INTO turn_usage ({USAGE_COLUMNS.removeprefix('id, ')}) VALUES (?,?,?,?,?,?,?,?,?)"
# Free-text columns (may hold NUL): message and usage tuples in column order without the id.
_MESSAGE_TEXT = (0, 4, 5, 6, 7)
_USAGE_TEXT = (0, 3)


def _query(tx: Tx[Any]) -> Query:
    return lambda sql, params: tx.conn.execute(sql, params).fetchall()


def _encoded(dialect: Dialect, row: Sequence[Any], text: tuple[int, ...]) -> tuple[Any, ...]:
    return tuple(dialect.encode(v) if i in text and isinstance(v, str) else v for i, v in enumerate(row))


def _decoded(dialect: Dialect, row: Sequence[Any]) -> list[Any]:
    """A stored ``MESSAGE_COLUMNS`` row with its free text as written."""
    r = list(row)
    for i in (1, 5, 6, 7, 8):
        r[i] = dialect.decode(r[i])
    return r


def _message(dialect: Dialect, row: Sequence[Any], position: int) -> TranscriptMessage:
    return row_to_message(_decoded(dialect, row), position)


def _usage(dialect: Dialect, row: Sequence[Any]) -> UsageRecord:
    r = list(row)
    r[1], r[4] = dialect.decode(r[1]), dialect.decode(r[4])
    return row_to_usage(r)


def append_body(
    tx: Tx[Any], drafts: Sequence[MessageDraft], tail: tuple[int, TailMark | None] | None
) -> tuple[list[TranscriptMessage], TranscriptPage | None]:
    """Write: append ``drafts`` at the live taint; with ``tail`` (limit, mark) also read the own tail."""
    conn, record, dialect = tx.conn, tx.record, tx.dialect
    scope = (dialect.encode(record.id), record.agent_id, *visible_args(record.taint_code))
    (start,) = conn.execute(dialect.sql(f"SELECT count(*) {_WHERE_VISIBLE}"), scope).fetchone()
    insert = dialect.sql(_MESSAGE_INSERT)
    stored = []
    for offset, d in enumerate(drafts):
        row = (
            record.id,
            record.agent_id,
            record.taint_code,
            d.role,
            d.content,
            d.tool_calls,
            d.tool_call_id,
            d.origin,
            to_us(tx.now),
        )
        row_id = dialect.inserted_id(conn, insert, _encoded(dialect, row, _MESSAGE_TEXT))
        stored.append(row_to_message((row_id, *row), start + offset))
    events = [append_draft(record, drafts)]
    page = None
    if tail is not None:
        page = _tail(tx, record.id, *tail)
        events.append(read_draft(record, page, tail[0], own=True))
    tx.append_many(events)
    return stored, page


def _tail(tx: Tx[Any], transcript_id: str, limit: int, since: TailMark | None) -> TranscriptPage:
    scope = (tx.dialect.encode(transcript_id), tx.record.agent_id, *visible_args(tx.record.taint_code))
    rows, first, total, last, delta = tail_rows(_query(tx), tx.dialect, scope, limit, since)
    messages = tuple(_message(tx.dialect, r, first + i) for i, r in enumerate(rows))
    return TranscriptPage(messages, total, last, delta)


def read_body(
    tx: Tx[Any], transcript_id: str | None, start: int | None, limit: int, since: TailMark | None
) -> TranscriptPage:
    """Read: positions ``start .. start+limit`` of what the reader may see of ``transcript_id``.

    ``start`` None: the last ``limit`` (only those after ``since`` when the reader holds the rest).
    ``transcript_id`` None: a transcript the caller may not name (``UNNAMED``).
    """
    if transcript_id is None:
        return UNNAMED
    if start is None:
        return _tail(tx, transcript_id, limit, since)
    scope = (tx.dialect.encode(transcript_id), tx.record.agent_id, *visible_args(tx.record.taint_code))
    rows, total = range_rows(_query(tx), tx.dialect, scope, start, limit)
    return TranscriptPage(tuple(_message(tx.dialect, r, start + i) for i, r in enumerate(rows)), total)


def usage_body(tx: Tx[Any], draft: UsageDraft) -> UsageRecord:
    """Write: one usage record at the live taint, and its ``usage.record`` event (counts, never content)."""
    record = tx.record
    row = (
        record.id,
        record.agent_id,
        record.taint_code,
        draft.model,
        draft.input_tokens,
        draft.output_tokens,
        draft.cached_input_tokens,
        str(draft.cost_usd),
        to_us(tx.now),
    )
    row_id = tx.dialect.inserted_id(
        tx.conn, tx.dialect.sql(_USAGE_INSERT), _encoded(tx.dialect, row, _USAGE_TEXT)
    )
    tx.append(
        AuditDraft(
            "usage.record",
            record.id,
            record.agent_id,
            record.taint_code,
            levels=(record.taint,),
            detail={
                "model": draft.model[:100],
                "input_tokens": draft.input_tokens,
                "output_tokens": draft.output_tokens,
            },
        )
    )
    return row_to_usage((row_id, *row))


def _usage_scope(tx: Tx[Any], agent_id: str | None) -> tuple[str, tuple[Any, ...]]:
    """The usage rows a read sees: the session's agent at levels <= its taint, or (operator) one agent or all."""
    if tx.session is not None:
        clause = "AND agent_id = ? AND " + visible_sql("level", "?", "?", "?")
        return clause, (tx.session.agent_id, *visible_args(tx.session.taint_code))
    if agent_id is not None:
        return "AND agent_id = ?", (agent_id,)
    return "", ()


def spent_body(
    tx: Tx[Any], agent_id: str | None, windows: Sequence[tuple[datetime, datetime]]
) -> list[Decimal]:
    """Read: the exact spend per window."""
    clauses, params = _usage_scope(tx, agent_id)
    sql = tx.dialect.sql(f"SELECT cost_usd FROM turn_usage WHERE at_us >= ? AND at_us < ? {clauses}")
    return [
        sum_costs([r[0] for r in tx.conn.execute(sql, (to_us(since), to_us(until), *params))])
        for since, until in windows
    ]


def usage_rows_body(
    tx: Tx[Any], agent_id: str | None, since: datetime | None, until: datetime | None, limit: int
) -> list[UsageRecord]:
    """Read: usage records in ``[since, until)``, oldest first, at most ``limit``."""
    clauses, params = _usage_scope(tx, agent_id)
    low = to_us(since) if since else -(2**62)
    high = to_us(until) if until else 2**62
    rows = tx.conn.execute(
        tx.dialect.sql(
            f"SELECT {USAGE_COLUMNS} FROM turn_usage WHERE at_us >= ? AND at_us < ? {clauses} ORDER BY id LIMIT ?"
        ),
        (low, high, *params, limit),
    ).fetchall()
    return [_usage(tx.dialect, r) for r in rows]


def purge_body(
    tx: Tx[Any], messages_before: datetime | None, usage_before: datetime | None, agent_id: str | None
) -> tuple[int, int]:
    """Operator: hard-delete messages and usage older than their retention, and the ``purge.turns`` event."""
    agent_sql, agent_params = ("AND agent_id = ?", [agent_id]) if agent_id is not None else ("", [])
    messages = usage = 0
    if messages_before is not None:
        messages = tx.conn.execute(
            tx.dialect.sql(f"DELETE FROM turn_messages WHERE created_us < ? {agent_sql}"),
            [to_us(messages_before), *agent_params],
        ).rowcount
    if usage_before is not None:
        usage = tx.conn.execute(
            tx.dialect.sql(f"DELETE FROM turn_usage WHERE at_us < ? {agent_sql}"),
            [to_us(usage_before), *agent_params],
        ).rowcount
    tx.append(operator_draft("purge.turns", agent_id=agent_id, detail={"messages": messages, "usage": usage}))
    return messages, usage


def export_body(tx: Tx[Any], agent_id: str | None) -> list[TranscriptMessage | UsageRecord]:
    """Operator read: every message (positioned per transcript) then every usage record, in row order."""
    agent_sql, params = ("WHERE agent_id = ?", (agent_id,)) if agent_id is not None else ("", ())
    messages = tx.conn.execute(
        tx.dialect.sql(f"SELECT {MESSAGE_COLUMNS} FROM turn_messages {agent_sql} ORDER BY id"), params
    ).fetchall()
    usage = tx.conn.execute(
        tx.dialect.sql(f"SELECT {USAGE_COLUMNS} FROM turn_usage {agent_sql} ORDER BY id"), params
    ).fetchall()
    out: list[TranscriptMessage | UsageRecord] = list(positioned(_decoded(tx.dialect, r) for r in messages))
    out.extend(_usage(tx.dialect, r) for r in usage)
    return out


def insert_rows(conn: Any, dialect: Dialect, records: Iterable[TranscriptMessage | UsageRecord]) -> int:
    """Append imported records inside the caller's transaction, order kept; returns how many."""
    message_sql, usage_sql = dialect.sql(_MESSAGE_INSERT), dialect.sql(_USAGE_INSERT)
    count = 0
    for r in records:
        if isinstance(r, TranscriptMessage):
            row: tuple[Any, ...] = (
                r.session_id,
                r.agent_id,
                r.label_code,
                r.role,
                r.content,
                r.tool_calls,
                r.tool_call_id,
                r.origin,
                to_us(r.created_at),
            )
            conn.execute(message_sql, _encoded(dialect, row, _MESSAGE_TEXT))
        else:
            row = (
                r.session_id,
                r.agent_id,
                r.label_code,
                r.model,
                r.input_tokens,
                r.output_tokens,
                r.cached_input_tokens,
                str(r.cost_usd),
                to_us(r.time),
            )
            conn.execute(usage_sql, _encoded(dialect, row, _USAGE_TEXT))
        count += 1
    return count


def import_draft(records: Sequence[TranscriptMessage | UsageRecord], count: int) -> AuditDraft:
    """The ``import.turns`` operator event: how many records and the levels they carry."""
    return operator_draft(
        "import.turns", detail={"count": count}, levels=tuple(sorted({r.level for r in records}))
    )
