"""Transcripts and usage on the SQLite backend: bodies run through its transaction seam.

Same database, same transactions and same audit chain as memories: an append
reads the session's taint inside its ``BEGIN IMMEDIATE`` and labels every row
with it, and appends its audit event (counts and roles, never content) before
COMMIT. A reader sees its own agent's rows at levels <= its live taint only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ...audit import AuditDraft
from ...levels import Level
from ..sql.dialect import SQLITE
from ..sql.rows import to_us
from ..sql.transcripts import (
    MESSAGE_COLUMNS,
    UNNAMED,
    USAGE_COLUMNS,
    MessageDraft,
    Query,
    TailMark,
    TranscriptMessage,
    TranscriptPage,
    UsageDraft,
    UsageRecord,
    append_draft,
    positioned,
    range_rows,
    read_draft,
    row_to_message,
    row_to_usage,
    sum_costs,
    tail_rows,
)
from ..transaction import Tx

if TYPE_CHECKING:
    from decimal import Decimal

    from ..records import SessionRecord
    from .backend import SQLiteBackend

R = TypeVar("R")


def append_messages(
    b: SQLiteBackend,
    session_id: str,
    drafts: Sequence[MessageDraft],
    now: datetime,
    tail: tuple[int, TailMark | None] | None = None,
) -> tuple[list[TranscriptMessage], TranscriptPage | None]:
    """Append ``drafts``; with ``tail`` (limit, mark) also read the own tail, in the same transaction."""
    return b.write(session_id, now, lambda tx: _append(tx, drafts, tail))


def _append(
    tx: Tx[sqlite3.Connection], drafts: Sequence[MessageDraft], tail: tuple[int, TailMark | None] | None
) -> tuple[list[TranscriptMessage], TranscriptPage | None]:
    conn, record = tx.conn, tx.record
    (start,) = conn.execute(
        "SELECT count(*) FROM turn_messages WHERE session_id = ? AND agent_id = ? AND level <= ?",
        (record.id, record.agent_id, int(record.taint)),
    ).fetchone()
    stored = []
    for offset, d in enumerate(drafts):
        row = (
            record.id,
            record.agent_id,
            int(record.taint),
            d.role,
            d.content,
            d.tool_calls,
            d.tool_call_id,
            d.origin,
            to_us(tx.now),
        )
        row_id = conn.execute(
            f"INSERT INTO turn_messages ({MESSAGE_COLUMNS.removeprefix('id, ')}) VALUES (?,?,?,?,?,?,?,?,?)",
            row,
        ).lastrowid
        stored.append(row_to_message((row_id, *row), start + offset))
    events = [append_draft(record, drafts)]
    page = None
    if tail is not None:
        page = _tail(conn, record, record.id, *tail)
        events.append(read_draft(record, page, tail[0], own=True))
    tx.append_many(events)
    return stored, page


def _query(conn: sqlite3.Connection) -> Query:
    return lambda sql, params: conn.execute(sql, params).fetchall()


def _tail(
    conn: sqlite3.Connection, record: SessionRecord, transcript_id: str, limit: int, since: TailMark | None
) -> TranscriptPage:
    scope = (transcript_id, record.agent_id, int(record.taint))
    rows, first, total, last, delta = tail_rows(_query(conn), SQLITE, scope, limit, since)
    return TranscriptPage(tuple(row_to_message(r, first + i) for i, r in enumerate(rows)), total, last, delta)


def read_messages(
    b: SQLiteBackend,
    session_id: str,
    transcript_id: str | None,
    start: int | None,
    limit: int,
    now: datetime,
    since: TailMark | None = None,
) -> TranscriptPage:
    """Positions ``start .. start+limit`` of what the reader may see of ``transcript_id``.

    ``start`` None: the last ``limit`` (only those after ``since`` when the reader holds the rest).
    ``transcript_id`` None: a transcript the caller may not name (``turn_rows.UNNAMED``).
    """

    def run(tx: Tx[sqlite3.Connection]) -> TranscriptPage:
        if transcript_id is None:
            return UNNAMED
        scope = (transcript_id, tx.record.agent_id, int(tx.record.taint))
        if start is None:
            return _tail(tx.conn, tx.record, transcript_id, limit, since)
        rows, total = range_rows(_query(tx.conn), tx.dialect, scope, start, limit)
        return TranscriptPage(tuple(row_to_message(r, start + i) for i, r in enumerate(rows)), total)

    record, page = b.read(session_id, now, lambda tx: (tx.record, run(tx)))
    b.append_audit(read_draft(record, page, limit, own=transcript_id == record.id, start=start), now)
    return page


def record_usage(b: SQLiteBackend, session_id: str, draft: UsageDraft, now: datetime) -> UsageRecord:
    def run(tx: Tx[sqlite3.Connection]) -> UsageRecord:
        record = tx.record
        row = (
            record.id,
            record.agent_id,
            int(record.taint),
            draft.model,
            draft.input_tokens,
            draft.output_tokens,
            draft.cached_input_tokens,
            str(draft.cost_usd),
            to_us(tx.now),
        )
        row_id = tx.conn.execute(
            f"INSERT INTO turn_usage ({USAGE_COLUMNS.removeprefix('id, ')}) VALUES (?,?,?,?,?,?,?,?,?)", row
        ).lastrowid
        tx.append(
            AuditDraft(
                "usage.record",
                record.id,
                record.agent_id,
                record.taint,
                levels=(record.taint,),
                detail={
                    "model": draft.model[:100],
                    "input_tokens": draft.input_tokens,
                    "output_tokens": draft.output_tokens,
                },
            )
        )
        return row_to_usage((row_id, *row))

    return b.write(session_id, now, run)


def usage_spent(
    b: SQLiteBackend,
    session_id: str | None,
    agent_id: str | None,
    windows: Sequence[tuple[datetime, datetime]],
) -> list[Decimal]:
    """Spend per window: the session's agent at levels <= its taint, or (operator) one agent or all."""

    def run(conn: sqlite3.Connection, clauses: str, params: tuple[Any, ...]) -> list[Decimal]:
        spent: list[Decimal] = []
        for since, until in windows:
            values = [
                r[0]
                for r in conn.execute(
                    f"SELECT cost_usd FROM turn_usage WHERE at_us >= ? AND at_us < ? {clauses}",
                    (to_us(since), to_us(until), *params),
                )
            ]
            spent.append(sum_costs(values))
        return spent

    return _usage_read(b, session_id, agent_id, run)


def _usage_read(
    b: SQLiteBackend,
    session_id: str | None,
    agent_id: str | None,
    body: Callable[[sqlite3.Connection, str, tuple[Any, ...]], R],
) -> R:
    """``body`` in one read transaction with the usage rows' scope: the session's (read inside it), or the operator's."""

    def run(tx: Tx[sqlite3.Connection]) -> R:
        if tx.session is not None:
            return body(
                tx.conn, "AND agent_id = ? AND level <= ?", (tx.session.agent_id, int(tx.session.taint))
            )
        if agent_id is not None:
            return body(tx.conn, "AND agent_id = ?", (agent_id,))
        return body(tx.conn, "", ())

    now = datetime.now(UTC)  # a read appends nothing: its time is only the context's
    if session_id is not None:
        return b.read(session_id, now, run)
    return b.operator(now, run, read_only=True)


def usage_records(
    b: SQLiteBackend,
    session_id: str | None,
    agent_id: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
) -> list[UsageRecord]:
    low = to_us(since) if since else -(2**62)
    high = to_us(until) if until else 2**62

    def run(conn: sqlite3.Connection, clauses: str, params: tuple[Any, ...]) -> list[UsageRecord]:
        rows = conn.execute(
            f"SELECT {USAGE_COLUMNS} FROM turn_usage WHERE at_us >= ? AND at_us < ? {clauses} ORDER BY id LIMIT ?",
            (low, high, *params, limit),
        ).fetchall()
        return [row_to_usage(r) for r in rows]

    return _usage_read(b, session_id, agent_id, run)


def purge(
    conn: sqlite3.Connection,
    messages_before: datetime | None,
    usage_before: datetime | None,
    agent_id: str | None,
) -> tuple[int, int]:
    """Hard-delete transcript messages and usage older than their retention (inside the caller's transaction)."""
    agent_sql, agent_params = ("AND agent_id = ?", [agent_id]) if agent_id is not None else ("", [])
    messages = usage = 0
    if messages_before is not None:
        messages = conn.execute(
            f"DELETE FROM turn_messages WHERE created_us < ? {agent_sql}",
            [to_us(messages_before), *agent_params],
        ).rowcount
    if usage_before is not None:
        usage = conn.execute(
            f"DELETE FROM turn_usage WHERE at_us < ? {agent_sql}", [to_us(usage_before), *agent_params]
        ).rowcount
    return messages, usage


def export(
    b: SQLiteBackend, agent_id: str | None, now: datetime
) -> Iterator[TranscriptMessage | UsageRecord]:
    agent_sql, params = ("WHERE agent_id = ?", (agent_id,)) if agent_id is not None else ("", ())

    def run(tx: Tx[sqlite3.Connection]) -> tuple[list[Any], list[Any]]:
        messages = tx.conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM turn_messages {agent_sql} ORDER BY id", params
        ).fetchall()
        usage = tx.conn.execute(
            f"SELECT {USAGE_COLUMNS} FROM turn_usage {agent_sql} ORDER BY id", params
        ).fetchall()
        return messages, usage

    messages, usage = b.operator(now, run, read_only=True)
    yield from positioned(messages)
    for row in usage:
        yield row_to_usage(row)


def import_rows(conn: sqlite3.Connection, records: Iterable[TranscriptMessage | UsageRecord]) -> int:
    """Append imported records (inside the caller's transaction), order kept; returns how many."""
    count = 0
    for r in records:
        if isinstance(r, TranscriptMessage):
            conn.execute(
                f"INSERT INTO turn_messages ({MESSAGE_COLUMNS.removeprefix('id, ')}) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    r.session_id,
                    r.agent_id,
                    int(r.level),
                    r.role,
                    r.content,
                    r.tool_calls,
                    r.tool_call_id,
                    r.origin,
                    to_us(r.created_at),
                ),
            )
        else:
            conn.execute(
                f"INSERT INTO turn_usage ({USAGE_COLUMNS.removeprefix('id, ')}) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    r.session_id,
                    r.agent_id,
                    int(r.level),
                    r.model,
                    r.input_tokens,
                    r.output_tokens,
                    r.cached_input_tokens,
                    str(r.cost_usd),
                    to_us(r.time),
                ),
            )
        count += 1
    return count


def levels_of(records: Sequence[TranscriptMessage | UsageRecord]) -> tuple[Level, ...]:
    return tuple(sorted({r.level for r in records}))
