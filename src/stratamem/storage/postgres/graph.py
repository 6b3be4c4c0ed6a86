"""The knowledge graph on PostgreSQL: the transactions its shared SQL (``sql.graph_read``, ``graph_write``) runs in.

The tables (migration 5 in ``migrations.py``) mirror SQLite's column for column
(so ``dump``/``restore`` move a graph between backends unchanged). Row-level security is the memories':
the application role reads rows of the bound session's agents at levels <=
its taint, and inserts or updates rows of its own agent at exactly the taint;
only operator transactions delete (purge). Postings may be deleted by their
writer, as memory postings are. Nothing in the graph needs a derived flag on
another level's rows (visibility is computed at query time), so no
SECURITY DEFINER function is involved.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

import psycopg

from ...audit import AuditDraft
from ..transaction import Body, Tx

if TYPE_CHECKING:
    from .backend import PostgresBackend

T = TypeVar("T")


VACUUM_TABLES = "graph_nodes, graph_observations, graph_edges, graph_postings, graph_part_stats"
GRAPH_LOCK = "\x1egraph"  # the advisory key serialising one agent's graph writes


class Graph:
    """``PostgresBackend.graph``: the backend's seam with the graph's locks around the body."""

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend

    def write(self, session_id: str, now: datetime, body: Body[psycopg.Connection, T]) -> T:
        """A write holding the agent's graph key lock."""

        def locked(tx: Tx[psycopg.Connection]) -> T:
            self.backend.lock_keys(tx.conn, [(tx.record.agent_id, GRAPH_LOCK)])
            return body(tx)

        return self.backend.write(session_id, now, locked)

    def read(self, session_id: str, now: datetime, body: Body[psycopg.Connection, tuple[T, AuditDraft]]) -> T:
        """A read and its audit event in one transaction (it appends, so it is a write that locks no session)."""

        def audited(tx: Tx[psycopg.Connection]) -> T:
            result, draft = body(tx)
            tx.append(draft)
            return result

        return self.backend.write(session_id, now, audited, lock_session=False)

    def operator(self, now: datetime, body: Body[psycopg.Connection, T]) -> T:
        """An operator act holding the store lock."""

        def locked(tx: Tx[psycopg.Connection]) -> T:
            self.backend.lock_store(tx.conn)
            return body(tx)

        return self.backend.operator(now, locked)
