"""The knowledge graph on SQLite: the transactions the shared operations run in (its tables: ``schema``).

The operations themselves (``graph_sql``) are the same on both backends;
here the SQLite backend's own transaction (``BEGIN IMMEDIATE`` for writes,
the session row read inside it) wraps them and appends the audit event in the
same transaction, exactly as a memory write does.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol import GraphBody
from ..sql.dialect import SQLITE
from ..sql.graph_read import GraphConn

if TYPE_CHECKING:
    from .backend import SQLiteBackend

T = TypeVar("T")


def write(backend: SQLiteBackend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    with backend._errors(), backend._tx(write=True) as conn:
        record = backend._session(conn, session_id)
        result, draft = body(GraphConn(conn, SQLITE), record)
        backend._append(conn, draft, now)
        return result


def read(backend: SQLiteBackend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    with backend._errors(), backend._tx(write=False) as conn:
        record = backend._session(conn, session_id)
        result, draft = body(GraphConn(conn, SQLITE), record)
    backend.append_audit(draft, now)
    return result


def operator(backend: SQLiteBackend, now: datetime, body: Callable[[GraphConn], tuple[T, Any]]) -> T:
    with backend._errors(), backend._tx(write=True) as conn:
        result, draft = body(GraphConn(conn, SQLITE))
        backend._append(conn, draft, now)
        return result
