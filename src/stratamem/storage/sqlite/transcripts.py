"""Transcripts and usage on the SQLite backend (the ``Backend`` methods delegate here).

Same database, same transactions and same audit chain as memories: an append
reads the session's taint inside its ``BEGIN IMMEDIATE`` and labels every row
with it, and appends its audit event (counts and roles, never content) before
COMMIT. A reader sees its own agent's rows at levels <= its live taint only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from decimal import Decimal

    from ..records import SessionRecord
    from .backend import SQLiteBackend


def append_messages(
    b: SQLiteBackend,
    session_id: str,
    drafts: Sequence[MessageDraft],
    now: datetime,
    tail: tuple[int, TailMark | None] | None = None,
) -> tuple[list[TranscriptMessage], TranscriptPage | None]:
    """Append ``drafts``; with ``tail`` (limit, mark) also read the own tail, in the same transaction."""
    with b._errors(), b._tx(write=True) as conn:
        record = b._session(conn, session_id)
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
                to_us(now),
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
        b._append_many(conn, events, now)
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
    with b._errors(), b._tx(write=False) as conn:
        record = b._session(conn, session_id)
        if transcript_id is None:
            page = UNNAMED
        elif start is None:
            page = _tail(conn, record, transcript_id, limit, since)
        else:
            rows, total = range_rows(
                _query(conn), SQLITE, (transcript_id, record.agent_id, int(record.taint)), start, limit
            )
            page = TranscriptPage(tuple(row_to_message(r, start + i) for i, r in enumerate(rows)), total)
    b.append_audit(read_draft(record, page, limit, own=transcript_id == record.id, start=start), now)
    return page


def record_usage(b: SQLiteBackend, session_id: str, draft: UsageDraft, now: datetime) -> UsageRecord:
    with b._errors(), b._tx(write=True) as conn:
        record = b._session(conn, session_id)
        row = (
            record.id,
            record.agent_id,
            int(record.taint),
            draft.model,
            draft.input_tokens,
            draft.output_tokens,
            draft.cached_input_tokens,
            str(draft.cost_usd),
            to_us(now),
        )
        row_id = conn.execute(
            f"INSERT INTO turn_usage ({USAGE_COLUMNS.removeprefix('id, ')}) VALUES (?,?,?,?,?,?,?,?,?)", row
        ).lastrowid
        b._append(
            conn,
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
            ),
            now,
        )
    return row_to_usage((row_id, *row))


def usage_spent(
    b: SQLiteBackend,
    session_id: str | None,
    agent_id: str | None,
    windows: Sequence[tuple[datetime, datetime]],
) -> list[Decimal]:
    """Spend per window: the session's agent at levels <= its taint, or (operator) one agent or all."""

    with b._errors(), b._tx(write=False) as conn:
        clauses, params = _usage_scope(b, conn, session_id, agent_id)
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


def _usage_scope(
    b: SQLiteBackend, conn: sqlite3.Connection, session_id: str | None, agent_id: str | None
) -> tuple[str, tuple[Any, ...]]:
    if session_id is not None:
        record = b._session(conn, session_id)
        return "AND agent_id = ? AND level <= ?", (record.agent_id, int(record.taint))
    if agent_id is not None:
        return "AND agent_id = ?", (agent_id,)
    return "", ()


def usage_records(
    b: SQLiteBackend,
    session_id: str | None,
    agent_id: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
) -> list[UsageRecord]:
    with b._errors(), b._tx(write=False) as conn:
        clauses, params = _usage_scope(b, conn, session_id, agent_id)
        low = to_us(since) if since else -(2**62)
        high = to_us(until) if until else 2**62
        rows = conn.execute(
            f"SELECT {USAGE_COLUMNS} FROM turn_usage WHERE at_us >= ? AND at_us < ? {clauses} ORDER BY id LIMIT ?",
            (low, high, *params, limit),
        ).fetchall()
    return [row_to_usage(r) for r in rows]


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


def export(b: SQLiteBackend, agent_id: str | None) -> Iterator[TranscriptMessage | UsageRecord]:
    agent_sql, params = ("WHERE agent_id = ?", (agent_id,)) if agent_id is not None else ("", ())
    with b._errors(), b._tx(write=False) as conn:
        messages = conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM turn_messages {agent_sql} ORDER BY id", params
        ).fetchall()
        usage = conn.execute(
            f"SELECT {USAGE_COLUMNS} FROM turn_usage {agent_sql} ORDER BY id", params
        ).fetchall()
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
