"""Transcripts and usage on the PostgreSQL backend (the ``Backend`` methods delegate here).

Mirrors ``sqlite_turns``: every write binds its transaction to the session
(read FOR SHARE, so a concurrent escalation waits or is seen), labels the rows
with the live taint and appends its audit event before COMMIT; row-level
security (migration 4) enforces the same rule in the database: own agent,
level <= taint to read, level = taint to write, operators only to delete.
Free text goes through ``enc``/``dec`` (NUL-safe).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import psycopg

from ...audit import AuditDraft, operator_draft
from ..sql.dialect import POSTGRES
from ..sql.rows import one_row, to_us
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
from .connect import bind_operator
from .rows import dec, enc

if TYPE_CHECKING:
    from ..records import SessionRecord
    from .backend import PostgresBackend

# Columns that may hold NUL, per table (for dump/restore as well).
ESCAPED = {
    "turn_messages": {"session_id", "content", "tool_calls", "tool_call_id", "origin"},
    "turn_usage": {"session_id", "model"},
}
_MSG_INSERT = (
    f"INSERT INTO turn_messages ({MESSAGE_COLUMNS.removeprefix('id, ')}) "
    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s) RETURNING id"
)
_USAGE_INSERT = (
    f"INSERT INTO turn_usage ({USAGE_COLUMNS.removeprefix('id, ')}) "
    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s) RETURNING id"
)


def _decoded_message(row: Sequence[Any]) -> tuple[Any, ...]:
    r = list(row)
    for i in (1, 5, 6, 7, 8):
        r[i] = dec(r[i])
    return tuple(r)


def _decoded_usage(row: Sequence[Any]) -> tuple[Any, ...]:
    r = list(row)
    r[1], r[4] = dec(r[1]), dec(r[4])
    return tuple(r)


def append_messages(
    b: PostgresBackend,
    session_id: str,
    drafts: Sequence[MessageDraft],
    now: datetime,
    tail: tuple[int, TailMark | None] | None = None,
) -> tuple[list[TranscriptMessage], TranscriptPage | None]:
    """Append ``drafts``; with ``tail`` (limit, mark) also read the own tail, in the same transaction."""

    def body(tx: Tx[psycopg.Connection]) -> tuple[list[TranscriptMessage], TranscriptPage | None]:
        conn, record = tx.conn, tx.record
        (start,) = one_row(
            conn.execute(
                "SELECT count(*) FROM turn_messages WHERE session_id = %s AND agent_id = %s AND level <= %s",
                (enc(record.id), record.agent_id, int(record.taint)),
            ).fetchone()
        )
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
            encoded = tuple(
                enc(v) if i in (0, 4, 5, 6, 7) and isinstance(v, str) else v for i, v in enumerate(row)
            )
            (row_id,) = one_row(conn.execute(_MSG_INSERT, encoded).fetchone())
            stored.append(row_to_message((row_id, *row), start + offset))
        events = [append_draft(record, drafts)]
        page = None
        if tail is not None:
            page = _tail(conn, record, record.id, *tail)
            events.append(read_draft(record, page, tail[0], own=True))
        tx.append_many(events)
        return stored, page

    return b.write(session_id, now, body)


def _query(conn: psycopg.Connection) -> Query:
    return lambda sql, params: conn.execute(sql, params).fetchall()


def _tail(
    conn: psycopg.Connection, record: SessionRecord, transcript_id: str, limit: int, since: TailMark | None
) -> TranscriptPage:
    scope = (enc(transcript_id), record.agent_id, int(record.taint))
    rows, first, total, last, delta = tail_rows(_query(conn), POSTGRES, scope, limit, since)
    return TranscriptPage(
        tuple(row_to_message(_decoded_message(r), first + i) for i, r in enumerate(rows)), total, last, delta
    )


def read_messages(
    b: PostgresBackend,
    session_id: str,
    transcript_id: str | None,
    start: int | None,
    limit: int,
    now: datetime,
    since: TailMark | None = None,
) -> TranscriptPage:
    """As ``sqlite_turns.read_messages``: ``transcript_id`` None reads as a transcript that does not exist."""

    def body(tx: Tx[psycopg.Connection]) -> TranscriptPage:
        conn, record = tx.conn, tx.record
        if transcript_id is None:
            page = UNNAMED
        elif start is None:
            page = _tail(conn, record, transcript_id, limit, since)
        else:
            scope = (enc(transcript_id), record.agent_id, int(record.taint))
            rows, total = range_rows(_query(conn), POSTGRES, scope, start, limit)
            page = TranscriptPage(
                tuple(row_to_message(_decoded_message(r), start + i) for i, r in enumerate(rows)), total
            )
        tx.append(read_draft(record, page, limit, own=transcript_id == record.id, start=start))
        return page

    # The page and its audit event in one transaction, which locks no session row (a read).
    return b.write(session_id, now, body, lock_session=False)


def record_usage(b: PostgresBackend, session_id: str, draft: UsageDraft, now: datetime) -> UsageRecord:
    def body(tx: Tx[psycopg.Connection]) -> UsageRecord:
        conn, record = tx.conn, tx.record
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
        encoded = tuple(enc(v) if i in (0, 3) and isinstance(v, str) else v for i, v in enumerate(row))
        (row_id,) = one_row(conn.execute(_USAGE_INSERT, encoded).fetchone())
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

    return b.write(session_id, now, body)


def _scope(
    b: PostgresBackend, conn: psycopg.Connection, session_id: str | None, agent_id: str | None
) -> tuple[str, tuple[Any, ...]]:
    if session_id is not None:
        record = b._bound_session(conn, session_id)
        return "AND agent_id = %s AND level <= %s", (record.agent_id, int(record.taint))
    bind_operator(conn)
    if agent_id is not None:
        return "AND agent_id = %s", (agent_id,)
    return "", ()


def usage_spent(
    b: PostgresBackend,
    session_id: str | None,
    agent_id: str | None,
    windows: Sequence[tuple[datetime, datetime]],
) -> list[Decimal]:
    def body(conn: psycopg.Connection) -> list[Decimal]:
        clauses, params = _scope(b, conn, session_id, agent_id)
        return [
            sum_costs(
                [
                    r[0]
                    for r in conn.execute(
                        f"SELECT cost_usd FROM turn_usage WHERE at_us >= %s AND at_us < %s {clauses}",
                        (to_us(since), to_us(until), *params),
                    )
                ]
            )
            for since, until in windows
        ]

    return b._read(body)


def usage_records(
    b: PostgresBackend,
    session_id: str | None,
    agent_id: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
) -> list[UsageRecord]:
    def body(conn: psycopg.Connection) -> list[UsageRecord]:
        clauses, params = _scope(b, conn, session_id, agent_id)
        low = to_us(since) if since else -(2**62)
        high = to_us(until) if until else 2**62
        rows = conn.execute(
            f"SELECT {USAGE_COLUMNS} FROM turn_usage WHERE at_us >= %s AND at_us < %s {clauses} "
            "ORDER BY id LIMIT %s",
            (low, high, *params, limit),
        ).fetchall()
        return [row_to_usage(_decoded_usage(r)) for r in rows]

    return b._read(body)


def purge(
    b: PostgresBackend,
    messages_before: datetime | None,
    usage_before: datetime | None,
    agent_id: str | None,
    now: datetime,
) -> tuple[int, int]:
    agent_sql, agent_params = ("AND agent_id = %s", [agent_id]) if agent_id is not None else ("", [])

    def body(conn: psycopg.Connection) -> tuple[int, int]:
        messages = usage = 0
        if messages_before is not None:
            messages = conn.execute(
                f"DELETE FROM turn_messages WHERE created_us < %s {agent_sql}",
                [to_us(messages_before), *agent_params],
            ).rowcount
        if usage_before is not None:
            usage = conn.execute(
                f"DELETE FROM turn_usage WHERE at_us < %s {agent_sql}", [to_us(usage_before), *agent_params]
            ).rowcount
        b._append(
            conn,
            operator_draft("purge.turns", agent_id=agent_id, detail={"messages": messages, "usage": usage}),
            now,
        )
        return messages, usage

    counts = b._operator(body)
    if any(counts):
        remaining = b._vacuum("turn_messages, turn_usage")
        if remaining:
            warnings.warn(
                f"purge removed {sum(counts)} transcript/usage record(s), but {remaining}",
                RuntimeWarning,
                stacklevel=3,
            )
    return counts


def export(b: PostgresBackend, agent_id: str | None) -> list[TranscriptMessage | UsageRecord]:
    agent_sql, params = ("WHERE agent_id = %s", (agent_id,)) if agent_id is not None else ("", ())

    def body(conn: psycopg.Connection) -> tuple[list[Any], list[Any]]:
        return (
            conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM turn_messages {agent_sql} ORDER BY id", params
            ).fetchall(),
            conn.execute(
                f"SELECT {USAGE_COLUMNS} FROM turn_usage {agent_sql} ORDER BY id", params
            ).fetchall(),
        )

    messages, usage = b._operator(body, read_only=True)
    out: list[TranscriptMessage | UsageRecord] = list(positioned(_decoded_message(r) for r in messages))
    out.extend(row_to_usage(_decoded_usage(r)) for r in usage)
    return out


def import_rows(conn: psycopg.Connection, records: Iterable[TranscriptMessage | UsageRecord]) -> int:
    count = 0
    for r in records:
        if isinstance(r, TranscriptMessage):
            conn.execute(
                _MSG_INSERT,
                (
                    enc(r.session_id),
                    r.agent_id,
                    int(r.level),
                    r.role,
                    enc(r.content),
                    enc(r.tool_calls),
                    enc(r.tool_call_id),
                    enc(r.origin),
                    to_us(r.created_at),
                ),
            )
        else:
            conn.execute(
                _USAGE_INSERT,
                (
                    enc(r.session_id),
                    r.agent_id,
                    int(r.level),
                    enc(r.model),
                    r.input_tokens,
                    r.output_tokens,
                    r.cached_input_tokens,
                    str(r.cost_usd),
                    to_us(r.time),
                ),
            )
        count += 1
    return count
