"""The knowledge graph on any backend: each operation's body run through the backend's graph seam.

The SQL is written once (``storage/sql/graph_read.py``, ``graph_write.py``, ``graph_batch.py``) against a
:class:`GraphConn`; here that connection is made from the transaction's ``Tx`` (its connection and
dialect) and the operation's audit event is placed: a write's and an operator act's appended in
their transaction, a read's returned to the seam, which records it with the read. ``backend.graph``
is the seam: it adds the engine's own steps around the body (PostgreSQL's key and store locks, the
Markdown store's pending hand edits).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ..audit import AuditDraft
from .records import SessionRecord
from .sql.graph_read import GraphConn

if TYPE_CHECKING:
    from .protocol import Backend
    from .transaction import Tx

T = TypeVar("T")

# A graph operation of a session: its result and the audit event it records.
GraphBody = Callable[[GraphConn, SessionRecord], tuple[T, AuditDraft]]
# A graph operation of the operator (bound to no session): its result and its audit event.
OperatorBody = Callable[[GraphConn], tuple[T, AuditDraft]]


def connection(tx: Tx[Any]) -> GraphConn:
    """The shared graph SQL's connection in this transaction."""
    return GraphConn(tx.conn, tx.dialect)


def write(backend: Backend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    """``body`` in one session write at the live taint, its event committed with its change."""

    def run(tx: Tx[Any]) -> T:
        result, draft = body(connection(tx), tx.record)
        tx.append(draft)
        return result

    return backend.graph.write(session_id, now, run)


def read(backend: Backend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    """``body`` in one session read over the visible view, then (or within it) its event."""
    return backend.graph.read(session_id, now, lambda tx: body(connection(tx), tx.record))


def operator(backend: Backend, now: datetime, body: OperatorBody[T]) -> T:
    """``body`` in one operator transaction over every row, its event committed with it."""

    def run(tx: Tx[Any]) -> T:
        result, draft = body(connection(tx))
        tx.append(draft)
        return result

    return backend.graph.operator(now, run)
