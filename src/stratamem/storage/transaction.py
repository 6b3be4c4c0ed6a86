"""The one transaction seam every backend offers: a body run inside the backend's own transaction.

A backend exposes ``read(session_id, now, body)``, ``write(session_id, now, body)`` and
``operator(now, body)``. Each opens its transaction, reads the session row *inside it*
(so a concurrent escalation is seen), and calls ``body(tx)`` with a :class:`Tx`: the
engine's connection, the SQL dialect, that session record, the operation's time and
``append`` for audit events. Shared SQL is written as such a body once and runs on
every SQL engine; no module outside a backend's package needs its private plumbing.

What ``append`` does follows the transaction:

- in ``write`` and ``operator`` the event is chained in the same transaction as the
  change it records, so both commit or neither does;
- in ``read`` there is nothing to commit a change with, and a read connection may not
  write: ``append`` refuses, and a read body returns its draft for the caller to record
  with the seam's ``append_audit`` once the read is done (``observed_read``, as every
  memory read does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from ..audit import AuditDraft
from ..models import AuditEvent, Memory
from .records import SessionRecord, read_event
from .sql.dialect import Dialect

C = TypeVar("C")  # the engine's connection: sqlite3.Connection, psycopg.Connection
T = TypeVar("T")

# Chains drafts after the audit log's tip inside the transaction, in order, at ``Tx.now``.
Appender = Callable[[Sequence[AuditDraft]], list[AuditEvent]]


def no_append(drafts: Sequence[AuditDraft]) -> list[AuditEvent]:
    """The appender of a read transaction: a read's event is recorded after it, never inside."""
    raise TypeError("a read transaction appends no audit event; record it with append_audit after the read")


@dataclass(frozen=True)
class Tx(Generic[C]):
    """What a body sees inside one backend transaction."""

    conn: C
    dialect: Dialect  # how the shared SQL is spelled on this engine
    # The session's row read inside this transaction; None in an operator transaction.
    session: SessionRecord | None
    now: datetime
    appender: Appender = no_append

    @property
    def record(self) -> SessionRecord:
        """The session record of a session transaction (``read``/``write``); an operator body has none."""
        if self.session is None:
            raise TypeError("an operator transaction is bound to no session")
        return self.session

    def append(self, draft: AuditDraft) -> AuditEvent:
        """Chain one audit event in this transaction (``write``/``operator`` only)."""
        return self.appender([draft])[0]

    def append_many(self, drafts: Sequence[AuditDraft]) -> list[AuditEvent]:
        """Chain several events in order with one read of the tip (a batch's events)."""
        return self.appender(drafts)


# A body run through ``read``/``write``/``operator``: its result is the method's result.
Body = Callable[[Tx[C]], T]


class Transactions(Protocol[C]):
    """The seam itself: what a backend offers a body. Engine errors surface as ``StorageError``."""

    def read(self, session_id: str, now: datetime, body: Body[C, T]) -> T:
        """``body`` in one read transaction, the session row read inside it; ``tx.append`` refuses."""
        ...

    def write(self, session_id: str, now: datetime, body: Body[C, T]) -> T:
        """``body`` in one write transaction that sees the live taint; its events commit with it."""
        ...

    def operator(self, now: datetime, body: Body[C, T], *, read_only: bool = False) -> T:
        """``body`` in one transaction bound to no session (every row); ``read_only``: nothing written."""
        ...


class Recording(Protocol[C]):
    """A seam's session reads and the append that records a read's event after it."""

    def read(self, session_id: str, now: datetime, body: Body[C, T]) -> T: ...
    def append_audit(self, draft: AuditDraft, now: datetime) -> AuditEvent: ...


def observed_read(
    seam: Recording[C],
    session_id: str,
    now: datetime,
    op: str,
    reader: Body[C, T],
    returned: Callable[[T], Sequence[Memory]],
    detail: Callable[[T], dict[str, Any]],
) -> T:
    """``reader`` over the session's visible view in one read transaction, then its ``op`` event (the
    memories ``returned`` names: keys, levels, lineages), committed before the result leaves."""
    record, result = seam.read(session_id, now, lambda tx: (tx.record, reader(tx)))
    seam.append_audit(read_event(op, record, returned(result), detail(result)), now)
    return result
