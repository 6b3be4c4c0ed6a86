"""Writing one version of a memory on SQLite, and the index upkeep that goes with it.

A save, a batch or an import stores each record at exactly the session's live
taint: a live version at the same (agent, key, level) is updated in place, an
expired one is retired first, and otherwise a new row is inserted. Its terms go
to the postings tail (``sqlite_tail``) or, in a batch, to ``PendingIndex`` for
one sorted flush; the (agent, level) partition's counts change with it; and the
``shadowable`` flags of the key's other live versions are refreshed when there
are any. Taking a version out (delete, purge, replacement) reverses each step,
and ``Versions`` is what the shared delete and restore (``sql/deletion``) ask
of the engine; ``reindex`` rebuilds it all. Everything here runs inside the
caller's write transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ...levels import Level
from ...models import Memory, context_of
from ...progress import tracked
from ...text import Analyzer
from ..sql import graph_write
from ..sql.dialect import SQLITE
from ..sql.graph_read import GraphConn
from ..sql.rows import from_us, json_strings, to_us
from . import frequency_tail, new_keys, postings_tail, vectors
from .deferred_index import PendingIndex

# the columns a save rewrites in a live version it updates in place
_UPDATED = " = ?, ".join(
    (
        "content",
        "tags",
        "category",
        "session_id",
        "created_us",
        "updated_us",
        "lineage_id",
        "expires_us",
        "length",
        "occurred_us",
        "context",
    )
)


def index(
    conn: sqlite3.Connection, mem_id: int, terms: dict[str, int], agent: str, level: int, length: int
) -> None:
    """Postings carry the document's agent, level and length so ranking never joins; they go to
    the append-only ``sqlite_tail`` (a page or two, not one per term), whose rows are also the
    document's frequencies until they are folded into ``postings`` and ``term_stats``."""
    level = int(level)
    postings_tail.append(conn, [(term, mem_id, tf, agent, level, length) for term, tf in terms.items()])


def unindex(
    conn: sqlite3.Connection,
    analyzer: Analyzer,
    mem_id: int,
    key: str,
    content: str,
    tags_json: str,
    agent: str,
    level: int,
) -> None:
    """A version's postings out of the index: its tail rows, or (once folded) its ``postings`` rows, found
    again by analysing its stored text, with a -1 document frequency per term left for the next fold."""
    if postings_tail.remove(conn, mem_id):
        return  # its frequencies were its tail rows (and its postings all there: written together)
    terms, _ = analyzer.document_terms(key, content, json.loads(tags_json))
    conn.executemany(
        "DELETE FROM postings WHERE term = ? AND memory_id = ?", [(term, mem_id) for term in terms]
    )
    # A term no live memory holds any more leaves term_stats when the tail is folded (purge folds).
    frequency_tail.record(conn, terms, agent, level, -1)


def stats_add(conn: sqlite3.Connection, agent: str, level: int, n: int, length: int) -> None:
    """Change the (agent, level) partition's document count and total length (BM25's N and average)."""
    conn.execute(
        "INSERT INTO part_stats(agent_id, level, n, total_len) VALUES (?,?,?,?) "
        "ON CONFLICT(agent_id, level) DO UPDATE SET n = n + excluded.n, total_len = total_len + excluded.total_len",
        (agent, int(level), n, length),
    )


def _stats(
    conn: sqlite3.Connection,
    pending: PendingIndex | None,
    agent: str,
    level: int,
    n: int,
    length: int,
) -> None:
    """Partition counts: at once for a single write, once per partition at the end of a batch."""
    if pending is not None:
        pending.count(agent, level, n, length)
    else:
        stats_add(conn, agent, level, n, length)


def refresh_shadowable(conn: sqlite3.Connection, agent: str, key: str) -> None:
    """Flag live versions that some higher live version of the same key could shadow."""
    conn.execute(
        """UPDATE memories SET shadowable = EXISTS (
               SELECT 1 FROM memories h WHERE h.agent_id = memories.agent_id AND h.key = memories.key
               AND h.level > memories.level AND h.deleted_us IS NULL)
           WHERE agent_id = ? AND key = ? AND deleted_us IS NULL""",
        (agent, key),
    )


def remove_live(
    conn: sqlite3.Connection, analyzer: Analyzer, row: Sequence[Any], deleted_us: int | None
) -> None:
    """Take a live version out of the index and statistics (soft delete or purge)."""
    mem_id, agent, key, level, content, tags, length = row
    unindex(conn, analyzer, mem_id, key, content, tags, agent, level)
    stats_add(conn, agent, level, -1, -length)
    vectors.mark_dead(conn, mem_id)
    if deleted_us is not None:
        conn.execute("UPDATE memories SET deleted_us = ?, shadowable = 0 WHERE id = ?", (deleted_us, mem_id))
    refresh_shadowable(conn, agent, key)


class Versions:
    """``sql.deletion.Versions`` on SQLite: the write transaction already excludes every other writer."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer

    def lock(self, conn: sqlite3.Connection, pairs: Iterable[tuple[str, str]]) -> None:
        """Nothing to take: ``BEGIN IMMEDIATE`` holds the database's one write lock."""

    def retire(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]], deleted_us: int | None) -> None:
        for row in rows:
            remove_live(conn, self.analyzer, row, deleted_us)

    def revive(self, conn: sqlite3.Connection, row: Sequence[Any]) -> None:
        mem_id, agent, key, level, content, tags = row[:6]
        terms, length = self.analyzer.document_terms(key, content, json.loads(tags))
        conn.execute("UPDATE memories SET deleted_us = NULL, length = ? WHERE id = ?", (length, mem_id))
        index(conn, mem_id, terms, agent, level, length)
        stats_add(conn, agent, level, 1, length)
        refresh_shadowable(conn, agent, key)

    def write(self, conn: sqlite3.Connection, memory: Memory, now_us: int) -> Memory:
        """One version written as an import writes it (``sql.declassification.Writer``)."""
        terms, length = self.analyzer.document_terms(memory.key, memory.content, memory.tags)
        return write_version(conn, self.analyzer, memory, terms, length, False, now_us)


def reindex(conn: sqlite3.Connection, analyzer: Analyzer) -> None:
    """Re-stem every live memory (the store's languages or the analyzer changed, or a restore)."""
    conn.execute("DELETE FROM postings")
    postings_tail.clear(conn)
    conn.execute("DELETE FROM part_stats")
    conn.execute("DELETE FROM term_stats")
    frequency_tail.clear(conn)
    rows = conn.execute(
        "SELECT id, agent_id, level, key, content, tags FROM memories WHERE deleted_us IS NULL"
    ).fetchall()
    pending = PendingIndex()
    for mem_id, agent, level, key, content, tags in tracked(rows, "reindexing"):
        terms, length = analyzer.document_terms(key, content, json.loads(tags))
        conn.execute("UPDATE memories SET length = ? WHERE id = ?", (length, mem_id))
        pending.add(mem_id, terms, agent, level, length)
        stats_add(conn, agent, level, 1, length)
    pending.flush(conn)
    graph_write.reindex(GraphConn(conn, SQLITE), analyzer)


def write_version(
    conn: sqlite3.Connection,
    analyzer: Analyzer,
    memory: Memory,
    terms: dict[str, int],
    length: int,
    keep_created: bool,
    now_us: int,
    pending: PendingIndex | None = None,
) -> Memory:
    """Insert or update the live version at (agent, key, level); returns what is stored.

    An expired version is not updated: it is retired first (out of the
    index, marked deleted as of its expiry, purgeable as before) and a fresh
    record takes its place, so nothing of it — created time, lineage —
    carries over. An expired record behaves exactly like an absent one.
    """
    code = memory.label_code  # the label (``stratamem.labels``): level and compartment bits
    live = conn.execute(
        "SELECT id, agent_id, key, level, content, tags, length, created_us, lineage_id, expires_us "
        "FROM memories WHERE agent_id = ? AND key = ? AND deleted_us IS NULL",
        (memory.agent_id, memory.key),
    ).fetchall()
    existing = next((row for row in live if row[3] == code), None)
    # Shadowing flags change only when the key has a live version at another level.
    other_levels = len(live) > (existing is not None)
    if existing and pending is not None and pending.holds(existing[0]):
        pending.flush(conn)  # the same key twice in one batch: its first postings must be in place
    if existing and existing[9] is not None and existing[9] <= now_us:
        remove_live(conn, analyzer, existing[:7], deleted_us=existing[9])
        existing = None
    tags_json = json_strings(memory.tags)  # json.dumps's text, without its per-call set-up
    updated_us = to_us(memory.updated_at)
    expires = to_us(memory.expires_at) if memory.expires_at else None
    if existing:
        mem_id: int | None = existing[0]
        created_us = existing[7] if keep_created else to_us(memory.created_at)
        lineage = existing[8] if keep_created else memory.lineage_id
        unindex(conn, analyzer, existing[0], existing[2], existing[4], existing[5], existing[1], existing[3])
        _stats(conn, pending, memory.agent_id, code, 0, length - existing[6])
    else:
        mem_id, created_us, lineage = None, to_us(memory.created_at), memory.lineage_id
    fields = (memory.content, tags_json, memory.category, memory.session_id, created_us, updated_us, lineage)
    occurred_us, context = to_us(memory.occurred_at), context_of(memory)
    if mem_id is not None:
        conn.execute(
            f"UPDATE memories SET {_UPDATED} = ? WHERE id = ?",
            (*fields, expires, length, occurred_us, context, mem_id),
        )
    else:
        mem_id = conn.execute(
            "INSERT INTO memories(agent_id, key, level, content, tags, category, session_id, created_us, "
            "updated_us, lineage_id, expires_us, length, occurred_us, context) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (memory.agent_id, memory.key, code, *fields, expires, length, occurred_us, context),
        ).lastrowid
        _stats(conn, pending, memory.agent_id, code, 1, length)
    assert mem_id is not None  # an INSERT's rowid
    if pending is not None:
        pending.add(mem_id, terms, memory.agent_id, code, length)
    else:
        index(conn, mem_id, terms, memory.agent_id, code, length)
        vectors.mark_pending(conn, mem_id, memory.agent_id, code)
    if other_levels:
        refresh_shadowable(conn, memory.agent_id, memory.key)
    # what was just written, as ``row_to_memory`` would read it back (times at stored precision)
    return Memory(
        key=memory.key,
        content=memory.content,
        level=Level(code & 3),
        label_code=code,
        tags=tuple(memory.tags),
        category=memory.category,
        agent_id=memory.agent_id,
        session_id=memory.session_id,
        created_at=from_us(created_us),
        updated_at=from_us(updated_us),
        lineage_id=lineage,
        expires_at=from_us(expires) if expires is not None else None,
        occurred_at=from_us(occurred_us),
    )


def write_batch(
    conn: sqlite3.Connection,
    analyzer: Analyzer,
    memories: Sequence[Memory],
    analysed: Sequence[tuple[dict[str, int], int]],
    keep_created: bool,
    now: datetime,
) -> list[Memory]:
    """The versions of a batch (save_many or import) with their index upkeep deferred to one flush."""
    if len(memories) > 1 and new_keys.all_new(conn, memories):
        return new_keys.insert_new(conn, memories, analysed)
    now_us = to_us(now)
    pending = PendingIndex() if len(memories) > 1 else None
    stored = [
        write_version(conn, analyzer, m, terms, length, keep_created, now_us, pending)
        for m, (terms, length) in zip(memories, analysed, strict=True)
    ]
    if pending is not None:
        pending.flush(conn)
    return stored
