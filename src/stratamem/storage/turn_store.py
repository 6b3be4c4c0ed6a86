"""The turn's records (transcript messages, usage) on any backend: each operation's body run through its seam.

The SQL is written once (``storage/sql/transcripts.py``); here each operation picks
its transaction: an append or a usage record is a session ``write`` (the live taint
read inside it, the audit event committed with the rows), a page of a transcript a
session ``read`` whose event is recorded once the read is done, spend and usage
reads a session ``read`` or an operator snapshot, purge and import operator writes.
``backend.transactions`` is the seam they run through (the Markdown backend's sidecar, the
SQL backends themselves); after a purge it erases the deleted rows' bytes where the
engine needs its own step for that.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ..audit import operator_draft
from .sql import transcripts as sql
from .sql.transcripts import (
    MessageDraft,
    TailMark,
    TranscriptMessage,
    TranscriptPage,
    UsageDraft,
    UsageRecord,
    read_draft,
)

if TYPE_CHECKING:
    from decimal import Decimal

    from .protocol import Backend
    from .transaction import Body, Tx

R = TypeVar("R")


def append_messages(
    backend: Backend, session_id: str, drafts: Sequence[MessageDraft], now: datetime
) -> list[TranscriptMessage]:
    """Append to the session's own transcript at its live taint, in one transaction."""
    return backend.transactions.write(session_id, now, lambda tx: sql.append_body(tx, drafts, None))[0]


def append_and_tail(
    backend: Backend,
    session_id: str,
    drafts: Sequence[MessageDraft],
    now: datetime,
    limit: int,
    since: TailMark | None,
) -> tuple[list[TranscriptMessage], TranscriptPage]:
    """Append, then read the own tail (the last ``limit``, or what follows ``since``), in one transaction."""
    stored, page = backend.transactions.write(
        session_id, now, lambda tx: sql.append_body(tx, drafts, (limit, since))
    )
    assert page is not None
    return stored, page


def read_messages(
    backend: Backend,
    session_id: str,
    transcript_id: str | None,
    start: int | None,
    limit: int,
    now: datetime,
    since: TailMark | None = None,
) -> TranscriptPage:
    """A page of ``transcript_id`` as the session may see it, then its ``transcript.read`` event.

    ``transcript_id`` None: one the caller may not name, read (and audited) as one that does not exist.
    """
    seam = backend.transactions
    record, page = seam.read(
        session_id, now, lambda tx: (tx.record, sql.read_body(tx, transcript_id, start, limit, since))
    )
    seam.append_audit(read_draft(record, page, limit, own=transcript_id == record.id, start=start), now)
    return page


def record_usage(backend: Backend, session_id: str, draft: UsageDraft, now: datetime) -> UsageRecord:
    return backend.transactions.write(session_id, now, lambda tx: sql.usage_body(tx, draft))


def _usage_read(backend: Backend, session_id: str | None, body: Body[Any, R]) -> R:
    """``body`` in the session's read transaction, or (no session) in an operator snapshot of every row."""
    now = datetime.now(UTC)  # a read appends nothing: its time is only the context's
    if session_id is not None:
        return backend.transactions.read(session_id, now, body)
    return backend.transactions.operator(now, body, read_only=True)


def usage_spent(
    backend: Backend,
    session_id: str | None,
    agent_id: str | None,
    windows: Sequence[tuple[datetime, datetime]],
) -> list[Decimal]:
    """Spend per window: the session's agent at levels <= its taint, or (operator) one agent or all."""
    return _usage_read(backend, session_id, lambda tx: sql.spent_body(tx, agent_id, windows))


def usage_records(
    backend: Backend,
    session_id: str | None,
    agent_id: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
) -> list[UsageRecord]:
    return _usage_read(backend, session_id, lambda tx: sql.usage_rows_body(tx, agent_id, since, until, limit))


def purge_turns(
    backend: Backend,
    messages_before: datetime | None,
    usage_before: datetime | None,
    agent_id: str | None,
    now: datetime,
) -> tuple[int, int]:
    """Hard-delete messages and usage past their retention in one operator transaction, then erase their bytes."""
    seam = backend.transactions
    counts = seam.operator(now, lambda tx: sql.purge_body(tx, messages_before, usage_before, agent_id))
    if any(counts):
        remaining = seam.erase_deleted("turn_messages, turn_usage")
        if remaining:
            warnings.warn(
                f"purge removed {sum(counts)} transcript/usage record(s), but {remaining}",
                RuntimeWarning,
                stacklevel=2,
            )
    return counts


def export_turns(
    backend: Backend, agent_id: str | None, now: datetime
) -> Iterator[TranscriptMessage | UsageRecord]:
    """Every message and usage record (of one agent) from one snapshot, then the ``export.turns`` event."""
    seam = backend.transactions
    records = seam.operator(now, lambda tx: sql.export_body(tx, agent_id), read_only=True)
    seam.append_audit(operator_draft("export.turns", agent_id=agent_id, detail={"count": len(records)}), now)
    return iter(records)


def import_turns(backend: Backend, records: Iterable[TranscriptMessage | UsageRecord], now: datetime) -> int:
    """Append exported records in one operator transaction with their ``import.turns`` event."""
    prepared = list(records)
    return backend.transactions.operator(now, lambda tx: import_body(tx, prepared))


def import_body(tx: Tx[Any], records: Sequence[TranscriptMessage | UsageRecord]) -> int:
    """Append exported records in the operator transaction ``tx``, their event chained in it (an import of
    memories runs it in its own transaction: all or nothing with the memories)."""
    count = sql.insert_rows(tx.conn, tx.dialect, records)
    tx.append(sql.import_draft(records, count))
    return count
