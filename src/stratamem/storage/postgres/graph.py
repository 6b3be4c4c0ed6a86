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

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from ..protocol import GraphBody
from ..sql.dialect import POSTGRES
from ..sql.graph_read import GraphConn
from ..transaction import Tx

if TYPE_CHECKING:
    from .backend import PostgresBackend

T = TypeVar("T")


VACUUM_TABLES = "graph_nodes, graph_observations, graph_edges, graph_postings, graph_part_stats"
GRAPH_LOCK = "\x1egraph"  # the advisory key serialising one agent's graph writes


def write(backend: PostgresBackend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    def tx(tx: Tx[psycopg.Connection]) -> T:
        backend.lock_keys(tx.conn, [(tx.record.agent_id, GRAPH_LOCK)])
        result, draft = body(GraphConn(tx.conn, POSTGRES), tx.record)
        tx.append(draft)
        return result

    return backend.write(session_id, now, tx)


def read(backend: PostgresBackend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    """A read and its audit event in one transaction (it appends, so it is a write that locks no session)."""

    def tx(tx: Tx[psycopg.Connection]) -> T:
        result, draft = body(GraphConn(tx.conn, POSTGRES), tx.record)
        tx.append(draft)
        return result

    return backend.write(session_id, now, tx, lock_session=False)


def operator(backend: PostgresBackend, now: datetime, body: Callable[[GraphConn], tuple[T, Any]]) -> T:
    def tx(tx: Tx[psycopg.Connection]) -> T:
        backend.lock_store(tx.conn)
        result, draft = body(GraphConn(tx.conn, POSTGRES))
        tx.append(draft)
        return result

    return backend.operator(now, tx)
