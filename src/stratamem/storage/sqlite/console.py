"""The SQLite side of the console: restoring a soft-deleted version (its reads are ``sql/console.py``'s).

Restore is the one operator write the console adds: a soft-deleted row goes
back into the index, statistics and shadowing flags exactly as a save would
put it there, in one transaction with its audit event.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING

from ...audit import AuditDraft
from ...errors import NotFound, ValidationError
from ...levels import Level
from ...models import Memory
from ..sql.rows import MEMORY_COLUMNS, row_to_memory, to_us
from ..transaction import Tx
from . import versions

if TYPE_CHECKING:
    from ...text import Analyzer
    from .backend import SQLiteBackend


def restore(backend: SQLiteBackend, ref: int, clearance: Level, actor: str, now: datetime) -> Memory:
    """Make soft-deleted row ``ref`` live again; refused when a live version holds its (agent, key, level)."""
    return backend.operator(now, lambda tx: _restore(tx, backend.analyzer, ref, clearance, actor))


def _restore(
    tx: Tx[sqlite3.Connection], analyzer: Analyzer, ref: int, clearance: Level, actor: str
) -> Memory:
    conn, now = tx.conn, tx.now
    row = conn.execute(
        f"SELECT {MEMORY_COLUMNS}, deleted_us FROM memories WHERE id = ? AND level <= ?",
        (ref, int(clearance)),
    ).fetchone()
    if row is None or row[12] is None:
        raise NotFound(f"no deleted record {ref} at or below {clearance.name}")
    mem_id, agent, key, level, content, tags = row[:6]
    holder = conn.execute(
        "SELECT id, agent_id, key, level, content, tags, length, expires_us FROM memories "
        "WHERE agent_id = ? AND key = ? AND level = ? AND deleted_us IS NULL",
        (agent, key, level),
    ).fetchone()
    if holder is not None and holder[7] is not None and holder[7] <= to_us(now):
        versions.remove_live(
            conn, analyzer, holder[:7], deleted_us=holder[7]
        )  # retired as a save would retire it
    elif holder is not None:
        raise ValidationError(f"a live version of {key!r} exists at {Level(level).name}; delete it first")
    terms, length = analyzer.document_terms(key, content, json.loads(tags))
    conn.execute("UPDATE memories SET deleted_us = NULL, length = ? WHERE id = ?", (length, mem_id))
    versions.index(conn, mem_id, terms, agent, level, length)
    versions.stats_add(conn, agent, level, 1, length)
    versions.refresh_shadowable(conn, agent, key)
    memory = row_to_memory(
        conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (mem_id,)).fetchone()
    )
    tx.append(
        AuditDraft(
            "restore",
            None,
            agent,
            memory.level,
            (key,),
            (memory.level,),
            (memory.lineage_id,),
            detail={"by": actor},
        )
    )
    return memory
