"""The sidecar's record of the files: which files a write touched, which keys it changed, what each file held.

- ``md_files``: per memory file, the (size, mtime_ns) and hash the store last
  read or wrote, and whether it parsed (``status``), so a scan reads only
  files that changed.
- ``md_dirty``: (agent, label, category, day) of every file a transaction
  touched, noted by triggers on ``memories`` *inside that transaction*: a
  process killed between the commit and the file writes leaves the note for
  the next opener to finish.
- ``temp.md_changed`` (on the write connection only): the keys one write
  changed, each with its live version before the write (``Changes``), so a
  hand edit landing while the write runs is merged around them.

Every ``level`` column here holds a label's stored integer (``stratamem.labels``), as in ``memories``; the
file it names is found through the sidecar's ``compartments`` table (the store's registry).

Every statement here runs in a sidecar transaction the caller opens.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

from ...labels import Compartments, Label
from ..sql import compartments as registry_sql
from ..sql.rows import MEMORY_COLUMNS, MEMORY_WIDTH, from_us, row_to_memory
from ..transaction import Tx
from . import format as fmt
from . import reconcile

DAY_US = 86_400_000_000
Changes = dict[tuple[str, int, str], tuple[Any, ...] | None]  # (agent, label code, key) -> live row before
Marked = dict[str, list[tuple[Any, ...]]]  # file -> its md_dirty marks
Groups = dict[str, tuple[str, int, Label, list[tuple[Any, ...]]]]  # file -> (agent, label code, label, rows)
Known = dict[str, tuple[Any, ...]]  # file -> its md_files row after the path

_DAY = f"CASE WHEN {{r}}.category IN ('daily', 'conversation') THEN ({{r}}.created_us - (({{r}}.created_us % {DAY_US}) + {DAY_US}) % {DAY_US}) / {DAY_US} ELSE 0 END"
_MARK = "INSERT OR IGNORE INTO md_dirty VALUES ({r}.agent_id, {r}.level, {r}.category, " + _DAY + ");"
SCHEMA = [
    "CREATE TABLE IF NOT EXISTS md_files (path TEXT PRIMARY KEY, agent_id TEXT NOT NULL, level INTEGER NOT NULL, "
    "size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL, status TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS md_dirty (agent_id TEXT NOT NULL, level INTEGER NOT NULL, category TEXT NOT NULL, "
    "day INTEGER NOT NULL, PRIMARY KEY (agent_id, level, category, day)) WITHOUT ROWID",
    "CREATE TRIGGER IF NOT EXISTS md_dirty_insert AFTER INSERT ON memories BEGIN "
    + _MARK.format(r="NEW")
    + " END",
    "CREATE TRIGGER IF NOT EXISTS md_dirty_update AFTER UPDATE OF agent_id, key, level, content, tags, category, "
    "session_id, created_us, updated_us, lineage_id, expires_us, deleted_us ON memories BEGIN "
    + _MARK.format(r="OLD")
    + " "
    + _MARK.format(r="NEW")
    + " END",
    "CREATE TRIGGER IF NOT EXISTS md_dirty_delete AFTER DELETE ON memories BEGIN "
    + _MARK.format(r="OLD")
    + " END",
]

_BEFORE = (
    "CASE WHEN OLD.deleted_us IS NULL THEN json_array(OLD.id, OLD.agent_id, OLD.key, OLD.level, OLD.content, "
    "OLD.tags, OLD.category, OLD.session_id, OLD.created_us, OLD.updated_us, OLD.lineage_id, OLD.expires_us, "
    "OLD.occurred_us, OLD.length, OLD.context) END"
)  # a row as ``reconcile.LIVE_SQL`` reads it
CHANGES = [
    "CREATE TEMP TABLE IF NOT EXISTS md_changed (agent_id TEXT NOT NULL, level INTEGER NOT NULL, "
    "key TEXT NOT NULL, before TEXT, PRIMARY KEY (agent_id, level, key)) WITHOUT ROWID",
    "CREATE TEMP TRIGGER IF NOT EXISTS md_changed_insert AFTER INSERT ON main.memories BEGIN "
    "INSERT OR IGNORE INTO md_changed VALUES (NEW.agent_id, NEW.level, NEW.key, NULL); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS md_changed_update AFTER UPDATE OF agent_id, key, level, content, tags, "
    "category, session_id, created_us, updated_us, lineage_id, expires_us, deleted_us, occurred_us, context "
    "ON main.memories BEGIN "
    f"INSERT OR IGNORE INTO md_changed VALUES (OLD.agent_id, OLD.level, OLD.key, {_BEFORE}); "
    "INSERT OR IGNORE INTO md_changed VALUES (NEW.agent_id, NEW.level, NEW.key, NULL); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS md_changed_delete AFTER DELETE ON main.memories BEGIN "
    f"INSERT OR IGNORE INTO md_changed VALUES (OLD.agent_id, OLD.level, OLD.key, {_BEFORE}); END",
]


def untimed() -> datetime:
    """The context time of a sidecar transaction that appends no event (the store's clock is left alone)."""
    return datetime.now(UTC)


def create_tables(tx: Tx[sqlite3.Connection]) -> None:
    for statement in [*SCHEMA, *CHANGES]:
        tx.conn.execute(statement)


def take_changes(tx: Tx[sqlite3.Connection]) -> Changes:
    """The keys changed since the last call, each with the version it had before; starts a new record."""
    rows = tx.conn.execute("SELECT agent_id, level, key, before FROM temp.md_changed").fetchall()
    tx.conn.execute("DELETE FROM temp.md_changed")
    return {
        (agent, int(level), key): tuple(json.loads(before)) if before is not None else None
        for agent, level, key, before in rows
    }


def known_files(tx: Tx[sqlite3.Connection]) -> Known:
    return {
        r[0]: r[1:]
        for r in tx.conn.execute("SELECT path, agent_id, level, size, mtime_ns, hash, status FROM md_files")
    }


def record_files(tx: Tx[sqlite3.Connection], gone: list[str], rows: list[tuple[Any, ...]]) -> None:
    """Forget the files in ``gone``; note ``rows`` (path, agent, level, size, mtime_ns, hash, status)."""
    tx.conn.executemany("DELETE FROM md_files WHERE path = ?", [(rel,) for rel in gone])
    tx.conn.executemany("INSERT OR REPLACE INTO md_files VALUES (?,?,?,?,?,?,?)", rows)


def registry(tx: Tx[sqlite3.Connection]) -> Compartments:
    """The store's compartments as the sidecar holds them (what turns a label folder into a code and back)."""
    return registry_sql.read_body(tx)


def marked_groups(
    tx: Tx[sqlite3.Connection], extra: dict[str, tuple[str, int]]
) -> tuple[Marked, Groups, Known]:
    """Every file ``md_dirty`` marks (and the ``extra`` ones) with its live rows, and what ``md_files`` knows of it."""
    conn = tx.conn
    marks = conn.execute("SELECT agent_id, level, category, day FROM md_dirty").fetchall()
    groups: Groups = {}
    marked: Marked = {}
    known_names = registry(tx) if any(m[1] >= 4 for m in marks) or extra else Compartments()
    for agent, code, category, day in marks:
        label = reconcile.label_of(known_names, code)
        rel = fmt.file_for(fmt.encode_segment(agent), label, category, from_us(day * DAY_US))
        marked.setdefault(rel, []).append((agent, code, category, day))
        if rel not in groups:
            groups[rel] = (agent, code, label, _group(conn, agent, code, category, day))
    for rel, (agent, code) in extra.items():
        if rel not in groups:
            label = reconcile.label_of(known_names, code)
            groups[rel] = (agent, code, label, _group_of_file(conn, rel, agent, code, known_names))
    if not groups:
        return {}, {}, {}
    known = {}
    for rel in groups:
        row = conn.execute(
            "SELECT size, mtime_ns, hash, status FROM md_files WHERE path = ?", (rel,)
        ).fetchone()
        if row is not None:
            known[rel] = row
    return marked, groups, known


def clear_marks(tx: Tx[sqlite3.Connection], done: list[tuple[Any, ...]]) -> None:
    tx.conn.executemany(
        "DELETE FROM md_dirty WHERE agent_id = ? AND level = ? AND category = ? AND day = ?", done
    )


def _group(
    conn: sqlite3.Connection, agent: str, level: int, category: str, day: int
) -> list[tuple[Any, ...]]:
    sql = f"SELECT {MEMORY_COLUMNS}, context FROM memories WHERE agent_id = ? AND level = ? AND deleted_us IS NULL "
    if category in fmt.DAILY_CATEGORIES:
        rows = conn.execute(
            sql + "AND category IN ('daily', 'conversation') AND created_us >= ? AND created_us < ?",
            (agent, level, day * DAY_US, (day + 1) * DAY_US),
        )
    else:
        rows = conn.execute(sql + "AND category = ?", (agent, level, category))
    found: list[tuple[Any, ...]] = rows.fetchall()
    return found


def _group_of_file(
    conn: sqlite3.Connection, rel: str, agent: str, code: int, known: Compartments
) -> list[tuple[Any, ...]]:
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS}, context FROM memories WHERE agent_id = ? AND level = ? AND deleted_us IS NULL",
        (agent, code),
    )
    return [r for r in rows if reconcile.file_of(row_to_memory(r[:MEMORY_WIDTH]), known) == rel]
