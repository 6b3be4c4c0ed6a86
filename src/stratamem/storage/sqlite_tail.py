"""Postings of single writes as an append-only tail, folded into ``postings`` in bulk.

A durable save commits every B-tree page it dirtied. ``postings`` is ordered
by term, so a memory's fifteen-odd distinct terms land on as many pages —
the largest part of what a single save wrote. Here a single save (or a
replacement) appends its postings, the same columns, to ``postings_tail``, a
rowid table: they land on its last page or two.

When the tail's last row id reaches ``FOLD_AT`` (ids restart from 1 once
it is empty, so it never holds more rows than that), the write that reaches
it moves the whole tail into ``postings`` — one
``INSERT ... SELECT`` ordered by (term, memory id), so each page of the term
order is visited once for every write it holds — and empties it, in that
same transaction. Batches (``PendingIndex``) write to ``postings`` directly;
reindex empties the tail.

A memory's postings are all in one place: written together by one write,
removed together (``remove`` deletes the memory's tail rows, the caller its
``postings`` rows). Readers score ``postings`` and the tail together
(``union``): every contribution is a fixed-point integer summed per memory,
so a store answers bit-identically with its tail folded or not
(``tests/test_postings_tail.py``), and the filters (agent in scope, level at
most the taint, hidden versions) are the same on both sides, so
noninterference is unchanged. The tail holds at most ``FOLD_AT`` rows; a
query scans it whole (it has no index — an index ordered by term would
dirty a page per term again).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

FOLD_AT = 1024  # the tail's last row id (about sixty single saves); a query scans at most this many rows

COLUMNS = "term, memory_id, tf, agent_id, level, length"

SCHEMA = """
CREATE TABLE IF NOT EXISTS postings_tail (
    id INTEGER PRIMARY KEY,
    term TEXT NOT NULL,
    memory_id INTEGER NOT NULL,
    tf INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    length INTEGER NOT NULL
)
"""


def create(conn: sqlite3.Connection) -> None:
    conn.execute(SCHEMA)


def append(conn: sqlite3.Connection, rows: Iterable[tuple[str, int, int, str, int, int]]) -> None:
    """One write's postings (term, memory id, tf, agent, level, length); folds when the tail is full."""
    conn.executemany(f"INSERT INTO postings_tail({COLUMNS}) VALUES (?,?,?,?,?,?)", rows)
    last = conn.execute("SELECT max(id) FROM postings_tail").fetchone()[0]
    if last is not None and last >= FOLD_AT:
        fold(conn)


def fold(conn: sqlite3.Connection) -> None:
    """Move the whole tail into ``postings`` in term order and empty it (rowids start again from 1)."""
    conn.execute(
        f"INSERT INTO postings({COLUMNS}) SELECT {COLUMNS} FROM postings_tail ORDER BY term, memory_id"
    )
    conn.execute("DELETE FROM postings_tail")


def remove(conn: sqlite3.Connection, mem_id: int) -> None:
    """A version leaving the index: its rows in the tail, if it was written there (a scan of the tail)."""
    conn.execute("DELETE FROM postings_tail WHERE memory_id = ?", (mem_id,))


def clear(conn: sqlite3.Connection) -> None:
    """The tail of an index about to be rebuilt from scratch."""
    conn.execute("DELETE FROM postings_tail")


def union(select: str, where: str) -> str:
    """``select`` over ``postings p`` and over the tail (also aliased ``p``) with the same ``where``,
    as one UNION ALL: the rows a reader would see had every write gone to ``postings``."""
    return f"{select} FROM postings p WHERE {where} UNION ALL {select} FROM postings_tail p WHERE {where}"
