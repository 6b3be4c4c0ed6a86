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

The tail is also its memories' document frequencies: one row per (term,
memory), so a term's count of documents in a partition is its number of
tail rows there (``doc_freqs`` adds them to ``term_stats``), and the fold
adds those counts to ``term_stats`` as it moves the rows. A single save thus
records no frequency change of its own, and taking a memory out of the tail
takes its frequencies with it; only versions indexed in ``postings`` leave a
-1 in ``term_deltas`` (``frequency_tail``) when they go.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ...labels import visible_sql

FOLD_AT = 1024  # the tail's last row id (about sixty single saves); a query scans at most this many rows

COLUMNS = "term, memory_id, tf, agent_id, level, length"
ROW = "(?,?,?,?,?,?)"
CHUNK = 128  # rows per INSERT (768 parameters, well under SQLite's bound); a statement per size is cached


def append(conn: sqlite3.Connection, rows: Sequence[tuple[str, int, int, str, int, int]]) -> None:
    """One write's postings (term, memory id, tf, agent, level, length); folds when the tail is full.

    Multi-row ``INSERT``s of up to ``CHUNK`` rows: the last one's ``lastrowid`` is the tail's
    largest id (a rowid table appends at max + 1), read in this transaction — no ``max(id)`` query.
    """
    last = None
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        values = ",".join([ROW] * len(chunk))
        flat = [value for row in chunk for value in row]
        last = conn.execute(f"INSERT INTO postings_tail({COLUMNS}) VALUES {values}", flat).lastrowid
    if last is not None and last >= FOLD_AT:
        fold(conn)


def fold(conn: sqlite3.Connection) -> None:
    """Add the tail's document counts to ``term_stats``, move its rows into ``postings`` in term order
    and empty it (rowids start again from 1)."""
    conn.execute(
        "INSERT INTO term_stats(term, agent_id, level, df) SELECT term, agent_id, level, count(*) "
        "FROM postings_tail WHERE true GROUP BY term, agent_id, level ORDER BY term, agent_id, level "
        "ON CONFLICT(term, agent_id, level) DO UPDATE SET df = df + excluded.df"
    )
    move(conn)


def move(conn: sqlite3.Connection) -> None:
    """Move the tail's rows into ``postings`` (term order) and empty it, leaving ``term_stats`` alone."""
    conn.execute(
        f"INSERT INTO postings({COLUMNS}) SELECT {COLUMNS} FROM postings_tail ORDER BY term, memory_id"
    )
    conn.execute("DELETE FROM postings_tail")


def remove(conn: sqlite3.Connection, mem_id: int) -> bool:
    """A version leaving the index: its rows in the tail, if it was written there (a scan of the tail).

    True when it was: its document frequencies left with its rows (see the module's docstring).
    """
    return conn.execute("DELETE FROM postings_tail WHERE memory_id = ?", (mem_id,)).rowcount > 0


def doc_freqs(term_list: str, agent_list: str) -> str:
    """``SELECT term, df`` rows whose per-term sum is the documents holding each of ``term_list``'s terms
    in the partitions of ``agent_list`` at levels up to ``:lvl``: ``term_stats`` plus the tail's rows."""
    where = f"term IN ({term_list}) AND agent_id IN ({agent_list}) AND {visible_sql('level')}"
    return f"SELECT term, df FROM term_stats WHERE {where} UNION ALL SELECT term, 1 FROM postings_tail WHERE {where}"


def clear(conn: sqlite3.Connection) -> None:
    """The tail of an index about to be rebuilt from scratch."""
    conn.execute("DELETE FROM postings_tail")


def union(select: str, where: str) -> str:
    """``select`` over ``postings p`` and over the tail (also aliased ``p``) with the same ``where``,
    as one UNION ALL: the rows a reader would see had every write gone to ``postings``."""
    return f"{select} FROM postings p WHERE {where} UNION ALL {select} FROM postings_tail p WHERE {where}"
