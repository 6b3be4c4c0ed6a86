"""The knowledge graph on SQLite: the transactions the shared operations run in (its tables: ``schema``).

The operations themselves (``storage/graph_store.py`` over ``storage/sql``) are the same on every
backend; here they run through the SQLite backend's own transaction seam (``BEGIN IMMEDIATE`` for
writes, the session row read inside it), a write's audit event appended in the same transaction,
exactly as a memory write does, and a read's recorded right after the read.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from ...audit import AuditDraft
from ..transaction import Body

if TYPE_CHECKING:
    from .backend import SQLiteBackend

T = TypeVar("T")


class Graph:
    """``SQLiteBackend.graph``: the backend's seam; a read's event appended once the read is done."""

    def __init__(self, backend: SQLiteBackend) -> None:
        self.backend = backend

    def write(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        return self.backend.write(session_id, now, body)

    def read(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, tuple[T, AuditDraft]]) -> T:
        result, draft = self.backend.read(session_id, now, body)
        self.backend.append_audit(draft, now)
        return result

    def operator(self, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        return self.backend.operator(now, body)
