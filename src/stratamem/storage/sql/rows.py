"""Rows as both backends store them, and back to the records callers see.

Times are integer microseconds since the epoch (UTC), tags and audit lists JSON
text, levels integers — one encoding, so ``dump`` rows move between backends
unchanged.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from json.encoder import encode_basestring_ascii
from typing import Any, TypeVar

from ...errors import StorageError
from ...labels import level_of
from ...levels import Level
from ...models import AuditEvent, Memory, situated

R = TypeVar("R")

MEMORY_COLUMNS = (
    "id, agent_id, key, level, content, tags, category, session_id, created_us, updated_us, "
    "lineage_id, expires_us, occurred_us"
)
#: how many columns ``MEMORY_COLUMNS`` names: a query's further columns start at this index
MEMORY_WIDTH = 13
AUDIT_COLUMNS = (
    "seq, at_us, session_id, agent_id, taint, operation, keys, levels, lineage, outcome, detail, "
    "prev_hash, hash"
)


def memory_rows(conn: sqlite3.Connection, ids: Sequence[int]) -> list[Any]:
    """SQLite: the memory rows with these ids, in no order.

    Any number of ids: they go as one JSON parameter, not one bound parameter each — SQLite caps those
    (32,766 here), and ties can make a ranked list as long as the view (thousands of identical notes).
    """
    if not ids:
        return []
    return conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps([int(i) for i in ids]),),
    ).fetchall()


def one_row(row: R | None) -> R:
    """The row of a query that always returns exactly one (an aggregate, a ``SELECT`` of values)."""
    if row is None:
        raise StorageError("the database answered an aggregate query with no row")
    return row


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_us(moment: datetime) -> int:
    """Exact epoch microseconds (integer arithmetic: a float timestamp loses microseconds far from 1970)."""
    if moment.tzinfo is None:  # a naive time is local, as ``datetime.timestamp`` reads it
        return round(moment.timestamp() * 1_000_000)
    return (moment - _EPOCH) // _MICROSECOND


@lru_cache(maxsize=4096)  # rows written by one call share one timestamp; datetimes are immutable
def from_us(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def row_to_memory(row: Sequence[Any]) -> Memory:
    (
        _id,
        agent,
        key,
        level,
        content,
        tags,
        category,
        session,
        created,
        updated,
        lineage,
        expires,
        occurred,
    ) = row
    return Memory(
        key=key,
        content=content,
        level=level_of(level),
        label_code=int(level),  # the compartments' names are the store's to resolve (``Store.named``)
        tags=tuple(json.loads(tags)),
        category=category,
        agent_id=agent,
        session_id=session,
        created_at=from_us(created),
        updated_at=from_us(updated),
        lineage_id=lineage,
        expires_at=from_us(expires) if expires is not None else None,
        occurred_at=from_us(
            occurred if occurred is not None else created
        ),  # NULL: a row from before the field
    )


def row_with_context(row: Sequence[Any], at: int = MEMORY_WIDTH) -> Memory:
    """A ``MEMORY_COLUMNS`` row whose stored context is column ``at``, as the record it stores."""
    return situated(row_to_memory(row[:MEMORY_WIDTH]), row[at])


def row_to_event(row: Sequence[Any]) -> AuditEvent:
    seq, at, session, agent, taint, op, keys, levels, lineage, outcome, detail, prev, digest = row
    return AuditEvent(
        seq=seq,
        time=from_us(at),
        session_id=session,
        agent_id=agent,
        taint=level_of(taint),
        taint_code=int(taint),
        operation=op,
        keys=tuple(json.loads(keys)),
        levels=tuple(Level[name] for name in json.loads(levels)),
        lineage_ids=tuple(json.loads(lineage)),
        outcome=outcome,
        detail=json.loads(detail),
        prev_hash=prev,
        hash=digest,
    )


def stored_memory(row: Sequence[Any], decode: Callable[[str | None], str | None]) -> Memory:
    """A ``MEMORY_COLUMNS`` row (possibly followed by others) as an engine stored it: content and source
    session through its dialect's ``decode``."""
    fields = list(row[:MEMORY_WIDTH])
    fields[4], fields[7] = decode(fields[4]), decode(fields[7])
    return row_to_memory(fields)


def stored_event(row: Sequence[Any], decode: Callable[[str | None], str | None]) -> AuditEvent:
    """An ``AUDIT_COLUMNS`` row as an engine stored it (the session id through its dialect's ``decode``);
    raises ValueError, KeyError or TypeError when the stored fields no longer parse."""
    return row_to_event([*row[:2], decode(row[2]), *row[3:]])


_SORTED = json.JSONEncoder(sort_keys=True)  # json.dumps(..., sort_keys=True) without a new encoder per call


def json_strings(values: Iterable[str]) -> str:
    """``json.dumps(list(values))`` of strings, without the encoder's per-call set-up (an event has four)."""
    return "[" + ", ".join(map(encode_basestring_ascii, values)) + "]"


def event_to_row(event: AuditEvent) -> tuple[Any, ...]:
    """An AuditEvent as an ``audit`` row (table column order); ``row_to_event`` reversed."""
    return (
        event.seq,
        to_us(event.time),
        event.session_id,
        event.agent_id,
        event.taint_code,
        event.operation,
        json_strings(event.keys),
        json_strings([lv.name for lv in event.levels]),
        json_strings(event.lineage_ids),
        event.outcome,
        _SORTED.encode(event.detail) if event.detail else "{}",
        event.prev_hash,
        event.hash,
    )
