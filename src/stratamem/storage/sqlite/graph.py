"""The knowledge graph on SQLite: its tables, and the transactions the shared operations run in.

The operations themselves (``graph_sql``) are the same on both backends;
here the SQLite backend's own transaction (``BEGIN IMMEDIATE`` for writes,
the session row read inside it) wraps them and appends the audit event in the
same transaction, exactly as a memory write does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol import GraphBody
from ..sql.graph_read import GraphConn

if TYPE_CHECKING:
    from .backend import SQLiteBackend

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS graph_nodes (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    name TEXT NOT NULL,
    level INTEGER NOT NULL,
    type TEXT NOT NULL,
    content TEXT NOT NULL,
    tags TEXT NOT NULL,
    source TEXT,
    session_id TEXT,
    created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    deleted_us INTEGER,
    length INTEGER NOT NULL DEFAULT 0,
    multi INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS graph_nodes_multi ON graph_nodes(agent_id) WHERE multi = 1 AND deleted_us IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS graph_nodes_live ON graph_nodes(agent_id, name, level) WHERE deleted_us IS NULL;
CREATE INDEX IF NOT EXISTS graph_nodes_doc ON graph_nodes(agent_id, name, level, length) WHERE deleted_us IS NULL;
CREATE INDEX IF NOT EXISTS graph_nodes_deleted ON graph_nodes(deleted_us) WHERE deleted_us IS NOT NULL;
CREATE TABLE IF NOT EXISTS graph_observations (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    name TEXT NOT NULL,
    level INTEGER NOT NULL,
    text TEXT NOT NULL,
    session_id TEXT,
    created_us INTEGER NOT NULL,
    pos INTEGER NOT NULL,
    deleted_us INTEGER,
    length INTEGER NOT NULL DEFAULT 0,
    anchored INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS graph_observations_orphans ON graph_observations(agent_id)
    WHERE anchored = 0 AND deleted_us IS NULL;
DROP INDEX IF EXISTS graph_observations_name;
CREATE INDEX IF NOT EXISTS graph_observations_doc ON graph_observations(agent_id, name, level, deleted_us, length);
CREATE INDEX IF NOT EXISTS graph_observations_deleted ON graph_observations(deleted_us) WHERE deleted_us IS NOT NULL;
CREATE TABLE IF NOT EXISTS graph_edges (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    relation TEXT NOT NULL,
    level INTEGER NOT NULL,
    note TEXT,
    session_id TEXT,
    created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    deleted_us INTEGER
);
CREATE INDEX IF NOT EXISTS graph_edges_source ON graph_edges(agent_id, source, level);
CREATE INDEX IF NOT EXISTS graph_edges_target ON graph_edges(agent_id, target, level);
CREATE INDEX IF NOT EXISTS graph_edges_deleted ON graph_edges(deleted_us) WHERE deleted_us IS NOT NULL;
CREATE TABLE IF NOT EXISTS graph_postings (
    term TEXT NOT NULL,
    unit_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    name TEXT NOT NULL,
    level INTEGER NOT NULL,
    tf INTEGER NOT NULL,
    PRIMARY KEY (term, unit_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS graph_postings_unit ON graph_postings(unit_id);
CREATE TABLE IF NOT EXISTS graph_part_stats (
    agent_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    nodes INTEGER NOT NULL,
    node_len INTEGER NOT NULL,
    obs_len INTEGER NOT NULL,
    PRIMARY KEY (agent_id, level)
) WITHOUT ROWID;
"""


def create_tables(conn: sqlite3.Connection) -> None:
    """Tables and indexes, idempotent. ``graph_nodes_doc`` and ``graph_observations_doc`` carry each
    row's length so a search reads the visible document lengths of its matches from the indexes alone
    (the ranking's costliest step otherwise); the second replaces the older ``graph_observations_name``."""
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def write(backend: SQLiteBackend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    with backend._errors(), backend._tx(write=True) as conn:
        record = backend._session(conn, session_id)
        result, draft = body(GraphConn(conn, postgres=False), record)
        backend._append(conn, draft, now)
        return result


def read(backend: SQLiteBackend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    with backend._errors(), backend._tx(write=False) as conn:
        record = backend._session(conn, session_id)
        result, draft = body(GraphConn(conn, postgres=False), record)
    backend.append_audit(draft, now)
    return result


def operator(backend: SQLiteBackend, now: datetime, body: Callable[[GraphConn], tuple[T, Any]]) -> T:
    with backend._errors(), backend._tx(write=True) as conn:
        result, draft = body(GraphConn(conn, postgres=False))
        backend._append(conn, draft, now)
        return result
