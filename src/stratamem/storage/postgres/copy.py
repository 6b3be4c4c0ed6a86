"""The whole-store copy on PostgreSQL: every row that is the store's truth out (``dump``), and into an empty
store with the derived indexes rebuilt (``restore``), for ``migrate`` between backends.

Rows travel in the SQLite backend's dump format (``sql/rows``' one encoding); text that may hold
NUL is stored escaped here (``rows.enc``) and travels as written. Postings, statistics, vectors
and the graph's index are derived and never copied.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from ...errors import ValidationError
from ...text import Analyzer
from ..sql import graph_read, graph_write
from ..sql.dialect import POSTGRES
from ..sql.rows import AUDIT_COLUMNS, one_row
from ..sql.transcripts import COPIED as TURN_TABLES
from . import index, vectors
from .connect import bind_operator
from .rows import dec, enc

Rows = list[tuple[Any, ...]]

# The rows that are the store's truth, in the SQLite backend's dump format: (columns, order) per table.
COPIED_TABLES: dict[str, tuple[str, str]] = {
    "compartments": ("name, bit", "bit"),  # first: every label below is read through it
    "sessions": ("id, agent_id, clearance, peers, taint, created_us, owner", "ord"),
    "taint_events": ("session_id, at_us, previous, new, reason, source", "ord"),
    "memories": (
        (
            "id, agent_id, key, level, content, tags, category, session_id, created_us, updated_us, "
            "lineage_id, expires_us, deleted_us, occurred_us, context"
        ),
        "id",
    ),
    "audit": (AUDIT_COLUMNS, "seq"),
    **{table: (columns, "id") for table, columns in TURN_TABLES.items()},
    **{table: (columns, "id") for table, columns in graph_read.COPIED_TABLES.items()},
}
# Columns a dump from an older version may lack (restored as NULL).
OPTIONAL: frozenset[str] = frozenset({"owner", "occurred_us", "context"})
# Columns that may hold NUL and are stored escaped (``rows.enc``).
ESCAPED: dict[str, set[str]] = {
    "compartments": set(),
    "sessions": {"id"},
    "taint_events": {"session_id", "reason", "source"},
    "memories": {"content", "session_id"},
    "audit": {"session_id"},
    "turn_messages": {"session_id", "content", "tool_calls", "tool_call_id", "origin"},
    "turn_usage": {"session_id", "model"},
    **{table: set() for table in graph_read.COPIED_TABLES},
}


def dump(pool: ConnectionPool) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every row that is the store's truth (not derived indexes), table by table, from one snapshot."""
    with pool.connection() as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            bind_operator(conn)
            for table, (columns, order) in COPIED_TABLES.items():
                names = [c.strip() for c in columns.split(",")]
                escaped = ESCAPED[table]
                with conn.cursor(name=f"dump_{table}") as cur:
                    cur.itersize = 2000
                    cur.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")
                    for row in cur:
                        values = dict(zip(names, row, strict=True))
                        for name in escaped:
                            values[name] = dec(values[name])
                        yield table, values
            head = conn.execute("SELECT seq, hash FROM audit_head").fetchone()
            if head and head[0] > 0:
                yield "meta", {"name": "audit_head", "value": f"{head[0]}:{head[1]}"}
        finally:
            conn.execute("ROLLBACK")


def restore(conn: psycopg.Connection, analyzer: Analyzer, rows: Iterable[tuple[str, dict[str, Any]]]) -> int:
    """Load ``dump`` output (from either backend) into this empty store inside the caller's operator
    transaction (holding the store lock), then rebuild the derived indexes."""
    if one_row(
        conn.execute(
            "SELECT EXISTS (SELECT 1 FROM memories UNION ALL SELECT 1 FROM audit "
            "UNION ALL SELECT 1 FROM sessions UNION ALL SELECT 1 FROM turn_messages)"
        ).fetchone()
    )[0]:
        raise ValidationError("the target store is not empty")
    count = 0
    pending: dict[str, Rows] = {}
    for table, row in rows:
        if table == "meta":
            if row.get("name") == "audit_head":
                seq, _, digest = str(row["value"]).partition(":")
                conn.execute("UPDATE audit_head SET seq = %s, hash = %s", (int(seq), digest))
            continue
        if table not in COPIED_TABLES:
            raise ValidationError(f"unknown table {table!r} in the copy stream")
        names = [c.strip() for c in COPIED_TABLES[table][0].split(",")]
        escaped = ESCAPED[table]
        try:
            values = tuple(
                enc(row[n]) if n in escaped else row[n] if n not in OPTIONAL else row.get(n) for n in names
            )
        except KeyError as exc:
            raise ValidationError(f"row of {table!r} lacks column {exc}") from None
        batch = pending.setdefault(table, [])
        batch.append(values)
        count += 1
        if len(batch) >= index.CHUNK:
            _flush(conn, table, batch)
    for table in COPIED_TABLES:  # sessions before memories before audit, as dumped
        if pending.get(table):
            _flush(conn, table, pending[table])
    conn.execute(
        "SELECT setval(pg_get_serial_sequence('memories', 'id'), greatest((SELECT max(id) FROM memories), 1))"
    )
    for table in TURN_TABLES:
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), greatest((SELECT max(id) FROM {table}), 1))"
        )
    index.reindex(conn, analyzer)
    graph_write.reindex(graph_read.GraphConn(conn, POSTGRES), analyzer)
    vectors.backfill(conn)
    return count


def _flush(conn: psycopg.Connection, table: str, batch: Rows) -> None:
    columns = COPIED_TABLES[table][0]
    placeholders = ", ".join(["%s"] * len(columns.split(",")))
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", batch)
    batch.clear()
