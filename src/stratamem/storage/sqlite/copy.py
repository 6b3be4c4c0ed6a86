"""The whole-store copy on SQLite: every row that is the store's truth out (``dump``), and into an
empty store with the derived indexes rebuilt (``restore``), for ``migrate`` between backends.

Rows travel as (table, row-dict) pairs in the one encoding both backends store (``sql/rows``);
postings, statistics, vectors and the graph's index are derived and never copied.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from ...errors import ValidationError
from ...text import Analyzer
from ..sql import graph_read
from ..sql.transcripts import COPIED as TURN_TABLES
from . import vectors, versions

COPIED_TABLES: dict[str, str] = {
    "compartments": "name, bit",  # first: every label below is read through it
    "sessions": "id, agent_id, clearance, peers, taint, created_us, owner",
    "taint_events": "session_id, at_us, previous, new, reason, source",
    "memories": "id, agent_id, key, level, content, tags, category, session_id, created_us, updated_us, "
    "lineage_id, expires_us, deleted_us, occurred_us, context",
    "audit": "seq, at_us, session_id, agent_id, taint, operation, keys, levels, lineage, outcome, detail, "
    "prev_hash, hash",
    **TURN_TABLES,
    **graph_read.COPIED_TABLES,
}


def dump(conn: sqlite3.Connection) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every row that is the store's truth (not derived indexes), table by table, in the caller's snapshot."""
    for table, columns in COPIED_TABLES.items():
        names = [c.strip() for c in columns.split(",")]
        order = "rowid" if table != "audit" else "seq"
        for row in conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}"):
            yield table, dict(zip(names, row, strict=True))
    head = conn.execute("SELECT value FROM meta WHERE name = 'audit_head'").fetchone()
    if head:
        yield "meta", {"name": "audit_head", "value": head[0]}


def restore(conn: sqlite3.Connection, analyzer: Analyzer, rows: Iterable[tuple[str, dict[str, Any]]]) -> int:
    """Load ``dump`` output into this (empty) store inside the caller's write transaction; rebuild the rest."""
    count = 0
    if conn.execute(
        "SELECT EXISTS (SELECT 1 FROM memories UNION ALL SELECT 1 FROM audit "
        "UNION ALL SELECT 1 FROM turn_messages)"
    ).fetchone()[0]:
        raise ValidationError("the target store is not empty")
    for table, row in rows:
        if table == "meta":
            conn.execute(
                "INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)", (row["name"], row["value"])
            )
            continue
        if table not in COPIED_TABLES:
            raise ValidationError(f"unknown table {table!r} in the copy stream")
        placeholders = ", ".join("?" * len(row))
        conn.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({placeholders})", list(row.values()))
        count += 1
    conn.execute("UPDATE memories SET length = 0 WHERE length IS NULL")
    versions.reindex(conn, analyzer)
    vectors.backfill(conn)
    for agent, key in conn.execute("SELECT DISTINCT agent_id, key FROM memories").fetchall():
        versions.refresh_shadowable(conn, agent, key)
    return count
