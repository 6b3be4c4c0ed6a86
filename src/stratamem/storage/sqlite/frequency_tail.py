"""Document-frequency decrements of single writes as an append-only tail, folded into ``term_stats`` in bulk.

A durable save commits every B-tree page it dirtied. ``term_stats`` is
ordered by term, so changing the document frequency of a memory's fifteen
distinct terms dirties about fifteen pages — half of what a single save
wrote. A single save's increments need no row at all: its postings in
``postings_tail`` are counted as they are (``postings_tail.doc_freqs``). A
version indexed in ``postings`` (by a batch, or folded) that leaves the index
— deleted, replaced, purged — appends one row here instead: its (agent,
level), -1, and its distinct terms separated by spaces (terms never hold
whitespace). The row lands on the table's last page.

When the tail holds ``FOLD_AT`` rows, the write that reaches it folds the
whole tail into ``term_stats`` — one sorted upsert per distinct (term, agent,
level), zero rows deleted — and empties it, in that same transaction. Purge
and reindex fold too, so no term of a purged memory lingers.

Readers add the tail to ``term_stats``: the rows of the session's own
partitions only (agent in scope, level at most the taint), the same filter
``term_stats`` is read with, so every document frequency is the exact integer
it would be had each write updated ``term_stats`` itself — noninterference
holds by construction (``tests/conformance/test_noninterference.py``).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping

from ...labels import visible_sql

FOLD_AT = 128  # tail rows (about one per single write); a reader scans at most this many

UPSERT = (
    "INSERT INTO term_stats(term, agent_id, level, df) VALUES (?,?,?,?) "
    "ON CONFLICT(term, agent_id, level) DO UPDATE SET df = df + excluded.df"
)
DROP_EMPTY = "DELETE FROM term_stats WHERE term = ? AND agent_id = ? AND level = ? AND df <= 0"


def record(conn: sqlite3.Connection, terms: Iterable[str], agent: str, level: int, delta: int) -> None:
    """One write's document-frequency change (-1: a version of ``postings`` unindexed); folds when full."""
    joined = " ".join(terms)
    if not joined:
        return
    last = conn.execute(
        "INSERT INTO term_deltas(agent_id, level, delta, terms) VALUES (?,?,?,?)",
        (agent, int(level), delta, joined),
    ).lastrowid  # the largest id: a rowid table appends at max + 1 (read in this transaction)
    if last is not None and last >= FOLD_AT:
        fold(conn)


def fold(conn: sqlite3.Connection) -> None:
    """Move the whole tail into ``term_stats`` (sorted, once per key) and empty it."""
    totals: Counter[tuple[str, str, int]] = Counter()
    for agent, level, delta, terms in conn.execute("SELECT agent_id, level, delta, terms FROM term_deltas"):
        for term in terms.split(" "):
            totals[(term, agent, level)] += delta
    if not totals:
        return
    changed = sorted(key for key, n in totals.items() if n)
    conn.executemany(UPSERT, [(t, a, lvl, totals[(t, a, lvl)]) for t, a, lvl in changed])
    conn.executemany(DROP_EMPTY, [k for k in changed if totals[k] < 0])
    conn.execute("DELETE FROM term_deltas")


def clear(conn: sqlite3.Connection) -> None:
    """The tail of an index about to be rebuilt from scratch."""
    conn.execute("DELETE FROM term_deltas")


def add_pending(
    conn: sqlite3.Connection, freqs: dict[str, int], agent_list: str, params: Mapping[str, object]
) -> None:
    """Add the tail's changes in the session's partitions to ``freqs`` (the query terms' frequencies)."""
    wanted = set(freqs)
    for delta, terms in conn.execute(
        f"SELECT delta, terms FROM term_deltas WHERE agent_id IN ({agent_list}) AND {visible_sql('level')}",
        dict(params),
    ):
        for term in wanted.intersection(terms.split(" ")):
            freqs[term] += delta
