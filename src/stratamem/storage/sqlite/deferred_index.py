"""Index upkeep deferred to the end of a batch: sorted postings, one upsert per term and per partition.

A ``save_many`` of 1,000 memories would otherwise send two small
``executemany`` calls per memory (postings, document frequencies), touching
the same term pages again and again. Collected here, the batch's postings go
in sorted by term (each B-tree page is visited once) and each (term, agent,
level) gets one document-frequency update carrying the whole batch's count.
Partition counts (``part_stats``) are summed per (agent, level) and the
versions' pending-vector marks sent in one ``executemany``. Same rows, same
numbers, same transaction as indexing one by one.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from operator import itemgetter

from . import vectors

INSERT_POSTINGS = "INSERT INTO postings(term, memory_id, tf, agent_id, level, length) VALUES (?,?,?,?,?,?)"
ADD_PART = (
    "INSERT INTO part_stats(agent_id, level, n, total_len) VALUES (?,?,?,?) "
    "ON CONFLICT(agent_id, level) DO UPDATE SET n = n + excluded.n, total_len = total_len + excluded.total_len"
)
ADD_DF = (
    "INSERT INTO term_stats(term, agent_id, level, df) VALUES (?,?,?,?) "
    "ON CONFLICT(term, agent_id, level) DO UPDATE SET df = df + excluded.df"
)


class PendingIndex:
    """Postings and document-frequency increments of the batch written so far, not yet sent."""

    def __init__(self) -> None:
        self.postings: list[tuple[str, int, int, str, int, int]] = []
        self.df: dict[tuple[str, int], Counter[str]] = {}  # per (agent, level): documents per term
        self.memories: set[int] = set()
        self.parts: dict[tuple[str, int], list[int]] = {}
        self.vectors: list[tuple[int, str, int]] = []

    def count(self, agent: str, level: int, n: int, length: int) -> None:
        """A change to the (agent, level) partition's document count and total length."""
        totals = self.parts.setdefault((agent, int(level)), [0, 0])
        totals[0] += n
        totals[1] += length

    def add(self, mem_id: int, terms: dict[str, int], agent: str, level: int, length: int) -> None:
        level = int(level)
        self.postings.extend([(term, mem_id, tf, agent, level, length) for term, tf in terms.items()])
        part = self.df.get((agent, level))
        if part is None:
            part = self.df[(agent, level)] = Counter()
        part.update(terms.keys())
        self.memories.add(mem_id)
        self.vectors.append((mem_id, agent, level))

    def holds(self, mem_id: int) -> bool:
        """A row indexed earlier in this batch: flush before touching its postings again."""
        return mem_id in self.memories

    def flush(self, conn: sqlite3.Connection) -> None:
        if self.postings:
            # by term (the stable sort keeps a term's rows in the order added: new ids grow); order only
            # decides which B-tree pages are visited together, never what is stored
            self.postings.sort(key=itemgetter(0))
            conn.executemany(INSERT_POSTINGS, self.postings)
            df = sorted((t, a, lvl, n) for (a, lvl), counts in self.df.items() for t, n in counts.items())
            conn.executemany(ADD_DF, df)
        if self.parts:
            conn.executemany(ADD_PART, [(a, lvl, n, length) for (a, lvl), (n, length) in self.parts.items()])
        vectors.mark_pending_many(conn, self.vectors)
        self.postings, self.df, self.memories, self.parts, self.vectors = [], {}, set(), {}, []
