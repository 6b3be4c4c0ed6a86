"""The PostgreSQL side of the console: restoring a soft-deleted version.

The console's reads are ``sql/console.py``'s, run in a read-only operator transaction
(row-level security lets operator transactions see every row; the queries apply the
clearance). Restore locks the key like a save, re-indexes the row with
the shared set-at-a-time helpers and appends its audit event in the same
transaction.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

import psycopg

from ...audit import AuditDraft
from ...errors import NotFound, ValidationError
from ...levels import Level
from ...models import Memory
from ..sql.rows import to_us
from ..transaction import Tx
from . import index
from .rows import MEMORY_COLUMNS, dec, row_to_memory

if TYPE_CHECKING:
    from .backend import PostgresBackend


def restore(backend: PostgresBackend, ref: int, clearance: Level, actor: str, now: datetime) -> Memory:
    """Make soft-deleted row ``ref`` live again; refused when a live version holds its (agent, key, level)."""

    def body(tx: Tx[psycopg.Connection]) -> Memory:
        conn = tx.conn
        head = conn.execute(
            "SELECT agent_id, key FROM memories WHERE id = %s AND level <= %s AND deleted_us IS NOT NULL",
            (ref, int(clearance)),
        ).fetchone()
        if head is None:
            raise NotFound(f"no deleted record {ref} at or below {clearance.name}")
        backend.lock_keys(conn, [(head[0], head[1])])
        row = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = %s AND deleted_us IS NOT NULL", (ref,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no deleted record {ref} at or below {clearance.name}")
        mem_id, agent, key, level, content, tags = row[:6]
        holder = conn.execute(
            "SELECT id, agent_id, key, level, content, tags, length, expires_us FROM memories "
            "WHERE agent_id = %s AND key = %s AND level = %s AND deleted_us IS NULL",
            (agent, key, level),
        ).fetchone()
        if holder is not None and holder[7] is not None and holder[7] <= to_us(now):
            index.remove_live(
                conn, backend.analyzer, [holder[:7]], deleted_us=holder[7]
            )  # as a save retires it
        elif holder is not None:
            raise ValidationError(f"a live version of {key!r} exists at {Level(level).name}; delete it first")
        terms, length = backend.analyzer.document_terms(key, dec(content), json.loads(tags))
        conn.execute(
            "UPDATE memories SET deleted_us = NULL, length = %s, terms = %s WHERE id = %s",
            (length, " ".join(terms), mem_id),
        )
        counts, stats = index.TermDelta(), index.StatsDelta()
        stats.add(agent, level, 1, length)
        postings = index.postings_statements([(mem_id, agent, level, terms, length)], counts)
        counts.apply(conn, *postings, stats.statement(), index.refresh_statement([(agent, key)]))
        memory = row_to_memory(row)
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

    return backend.operator(now, body)
