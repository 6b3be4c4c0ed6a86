"""The audit log on any backend: each read a body of the shared SQL run through ``backend.transactions``.

The log is written by the operations themselves (each change's event chained in its own
transaction) and by ``append`` (a read's event, the runtime's records), which commits one event
in a transaction of its own. Its reads — a reader's events (the visibility rule of
``sql/audit_pages.py``), the tip, the whole chain for verification (``sql/audit_chain.py``) — run
in a read-only operator snapshot, so every backend answers them from the same SQL.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ..audit import AuditDraft, first_bad_sequence
from ..errors import ValidationError
from ..models import AuditEvent
from .sql import audit_chain
from .sql.audit_pages import AuditQuery, events_body

if TYPE_CHECKING:
    from .protocol import Backend
    from .transaction import Body

R = TypeVar("R")


def append(backend: Backend, draft: AuditDraft, now: datetime) -> AuditEvent:
    """Record one event, committed before it returns (concurrent appends share a transaction)."""
    return backend.transactions.append_audit(draft, now)


def _snapshot(backend: Backend, body: Body[Any, R]) -> R:
    # a read appends nothing: its time is only the context's
    return backend.transactions.operator(datetime.now(UTC), body, read_only=True)


def events(backend: Backend, query: AuditQuery) -> list[AuditEvent]:
    """The events ``query``'s reader may see, oldest first."""
    return _snapshot(backend, lambda tx: events_body(tx, query))


def page(backend: Backend, query: AuditQuery) -> tuple[list[AuditEvent], bool]:
    """One page of ``query.limit`` events (oldest first) and whether more lie beyond it.

    Forward pages (``after``) continue after their last event; backward pages
    (no ``after``) continue before their first.
    """
    if query.limit is None:
        raise ValidationError("a page needs a limit")
    found = events(backend, replace(query, limit=query.limit + 1))
    if len(found) <= query.limit:
        return found, False
    return (found[: query.limit] if query.after is not None else found[1:]), True


def tip(backend: Backend) -> tuple[int, str]:
    """(sequence, hash) of the newest event, (0, GENESIS) when the log is empty."""
    return _snapshot(backend, audit_chain.tip_body)


def verify(backend: Backend, anchor: tuple[int, str] | None = None) -> int | None:
    """The first bad sequence number of the chain (checked against its head record and ``anchor``), or None."""
    head, chain = _snapshot(backend, audit_chain.chain_body)
    if isinstance(chain, int):
        return chain
    return first_bad_sequence(chain, head, anchor)
