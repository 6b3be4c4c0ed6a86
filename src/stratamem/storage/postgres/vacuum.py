"""Erasing purged bytes from PostgreSQL's files: ``VACUUM FULL`` of the tables that held them, briefly retried.

Deleting a row leaves its bytes in the table's pages until the table is rewritten; a purge
(memories, the graph, the turn's records) ends here so that what it removed is gone from the
files, or says what remains and how to finish.
"""

from __future__ import annotations

import re
import time
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from .graph import VACUUM_TABLES as GRAPH_TABLES

PURGED_TABLES = f"memories, postings, term_stats, memory_vectors, {GRAPH_TABLES}"
# VACUUM VERBOSE's detail line starts with the count of dead row versions it had to keep.
_LEADING_NUMBER = re.compile(r"\s*(\d+)\D")
ATTEMPTS = 7  # about 6 s of waiting at most
LOCK_TIMEOUT = "250ms"  # per attempt: how long everyone else may queue behind VACUUM FULL


def vacuum(pool: ConnectionPool, tables: str = PURGED_TABLES) -> str:
    """Rewrite the tables that held purged content, so its bytes leave the table and index files.

    A plain VACUUM only marks dead tuples reusable; their bytes stay in the
    pages. VACUUM FULL copies the live rows into new files and drops the
    old ones, holding an exclusive lock on each table while it does
    (seconds for a large store: schedule purges accordingly). It must keep
    row versions that a transaction still running anywhere in the database
    might see, so while the server reports such versions it is repeated,
    briefly; if they outlast that, a warning says so. The application role
    may do this from PostgreSQL 17 (MAINTAIN, granted at migration); on
    older servers the schema owner must. The server's WAL, archives,
    replicas and backups keep history on their own retention (README).

    It never queues long behind a reader: VACUUM FULL waits for its
    exclusive lock at most ``LOCK_TIMEOUT`` per attempt (while it
    waits, every other statement on those tables queues behind it). Returns
    "" when the bytes are gone, else what remains and how to finish.
    """
    problem = ""
    for attempt in range(ATTEMPTS):
        notices: list[tuple[str, str]] = []

        def handler(diag: psycopg.errors.Diagnostic, notices: list[Any] = notices) -> None:
            notices.append((diag.severity_nonlocalized or "", diag.message_detail or ""))

        try:
            with pool.connection() as conn:
                conn.add_notice_handler(handler)
                conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
                try:
                    conn.execute(f"VACUUM (FULL, VERBOSE) {tables}")
                finally:
                    conn.execute("RESET lock_timeout")
                    conn.remove_notice_handler(handler)
        except psycopg.errors.LockNotAvailable:
            problem = "another transaction kept the tables locked"
            time.sleep(0.05 * 2**attempt)
            continue
        except psycopg.Error as exc:
            problem = f"VACUUM FULL failed: {exc}"
            break
        if any(severity == "WARNING" for severity, _ in notices):
            problem = "the application role may not VACUUM these tables"
            break
        kept = sum(
            int(m.group(1))
            for severity, detail in notices
            if severity == "INFO"
            for m in [_LEADING_NUMBER.match(detail)]
            if m
        )
        if not kept:
            return ""
        problem = f"{kept} dead row version(s) were still visible to running transactions"
        time.sleep(0.05 * 2**attempt)
    return (
        f"{problem}, so PostgreSQL's files may still hold purged bytes; run purge again (any cutoff) "
        f"once those transactions end, or VACUUM FULL {tables} (as the schema owner "
        "before PostgreSQL 17)"
    )
