"""The knowledge graph on SQLite: the transactions the shared operations run in (its tables: ``schema``).

The operations themselves (``graph_sql``) are the same on both backends;
here each runs as a body through the SQLite backend's transaction seam
(``BEGIN IMMEDIATE`` for writes, the session row read inside it), which
appends the audit event in the same transaction, exactly as a memory write does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol import GraphBody
from ..sql.graph_read import GraphConn
from ..transaction import Tx

if TYPE_CHECKING:
    from .backend import SQLiteBackend

T = TypeVar("T")


def write(backend: SQLiteBackend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    def run(tx: Tx[sqlite3.Connection]) -> T:
        result, draft = body(GraphConn(tx.conn, tx.dialect), tx.record)
        tx.append(draft)
        return result

    return backend.write(session_id, now, run)


def read(backend: SQLiteBackend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    result, draft = backend.read(session_id, now, lambda tx: body(GraphConn(tx.conn, tx.dialect), tx.record))
    backend.append_audit(draft, now)
    return result


def operator(backend: SQLiteBackend, now: datetime, body: Callable[[GraphConn], tuple[T, Any]]) -> T:
    def run(tx: Tx[sqlite3.Connection]) -> T:
        result, draft = body(GraphConn(tx.conn, tx.dialect))
        tx.append(draft)
        return result

    return backend.operator(now, run)
