"""A batch of keys new to their agent, written in bulk: one statement per table for the lot.

Most batches (an importer, an agent saving a conversation's facts) write keys
that have no live version yet. For those, ``save`` one by one would look up
the key, insert the row and index it; nothing of that depends on another
record. ``all_new`` checks the whole batch in a few indexed lookups, and
``insert_new`` writes the rows with ids assigned in order from the table's
maximum — the ids SQLite would have given them one by one — then indexes
them through ``PendingIndex`` (sorted postings, one upsert per term and per
partition). Any batch with a key that is live at some level of its agent, or
repeated within the batch, takes the one-by-one path instead
(``sqlite_versions.write_version``), which handles replacement, expiry and
shadowing. Same rows, same numbers, same transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ...models import Memory, context_of
from ..sql.rows import from_us, json_strings, to_us
from .deferred_index import PendingIndex

CHUNK = 500  # keys per lookup, well under SQLite's bound on parameters

INSERT = (
    "INSERT INTO memories(id, agent_id, key, level, content, tags, category, session_id, created_us, "
    "updated_us, lineage_id, expires_us, length, occurred_us, context) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def all_new(conn: sqlite3.Connection, memories: Sequence[Memory]) -> bool:
    """No (agent, key) repeats in the batch and none has a live version, at any level, in the store."""
    by_agent: dict[str, list[str]] = {}
    for m in memories:
        by_agent.setdefault(m.agent_id, []).append(m.key)
    for agent, keys in by_agent.items():
        if len(set(keys)) != len(keys):
            return False
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start : start + CHUNK]
            marks = ", ".join("?" * len(chunk))
            live = conn.execute(
                f"SELECT 1 FROM memories WHERE agent_id = ? AND key IN ({marks}) AND deleted_us IS NULL LIMIT 1",
                [agent, *chunk],
            ).fetchone()
            if live is not None:
                return False
    return True


def insert_new(
    conn: sqlite3.Connection, memories: Sequence[Memory], analysed: Sequence[tuple[dict[str, int], int]]
) -> list[Memory]:
    """Insert a batch ``all_new`` accepted, index it, and return what is stored (read back from nothing)."""
    first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM memories").fetchone()[0]
    rows = [
        (
            mem_id,
            m.agent_id,
            m.key,
            m.label_code,
            m.content,
            json_strings(m.tags),
            m.category,
            m.session_id,
            to_us(m.created_at),
            to_us(m.updated_at),
            m.lineage_id,
            to_us(m.expires_at) if m.expires_at else None,
            length,
            to_us(m.occurred_at),
            context_of(m),
        )
        for mem_id, m, (_, length) in zip(
            range(first, first + len(memories)), memories, analysed, strict=True
        )
    ]
    conn.executemany(INSERT, rows)
    pending = PendingIndex()
    for row, (terms, length) in zip(rows, analysed, strict=True):
        pending.count(row[1], row[3], 1, length)
        pending.add(row[0], terms, row[1], row[3], length)
    pending.flush(conn)
    return [
        Memory(
            key=m.key,
            content=m.content,
            level=m.level,
            label_code=m.label_code,
            tags=tuple(m.tags),
            category=m.category,
            agent_id=m.agent_id,
            session_id=m.session_id,
            created_at=from_us(row[8]),
            updated_at=from_us(row[9]),
            lineage_id=m.lineage_id,
            expires_at=from_us(row[11]) if row[11] is not None else None,
            occurred_at=from_us(row[13]),
        )
        for m, row in zip(memories, rows, strict=True)
    ]
