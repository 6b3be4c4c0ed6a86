"""Erasing purged bytes from SQLite's write-ahead log without waiting behind readers.

After a purge the deleted pages are zeroed (``secure_delete``), but older
copies of them live on in the WAL, and the database file keeps the old pages
until a checkpoint copies the new ones over. ``wal_checkpoint(TRUNCATE)`` does
both and empties the WAL — but only once no reader still uses an older
snapshot, and it waits for that in SQLite's busy handler (the store's 60 s
busy timeout, over and over). So it runs here on a short-lived connection of
its own with a short busy timeout, a few times, and never under the store's
lock: every other operation of the store proceeds meanwhile. When a reader
outlasts the attempts, the caller reports that the bytes remain and how to
finish (run purge again once the reader is done).
"""

from __future__ import annotations

import sqlite3
import time

ATTEMPTS = 4
BUSY_TIMEOUT_MS = 250
PAUSE_S = 0.1  # doubled after each attempt: about 2 s in all at most

REMAINING = (
    "another connection still reads an older snapshot of the store, so the write-ahead log and the "
    "database file still hold the purged pages; run purge again (any cutoff) once that reader "
    "finishes, or close every connection to the store"
)


def truncate_wal(path: str) -> bool:
    """Checkpoint the whole WAL into the database file and truncate it; False when readers kept it busy."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        for attempt in range(ATTEMPTS):
            try:
                busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.OperationalError as exc:  # locked by a writer past the busy timeout
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                busy = 1
            if not busy:
                return True
            if attempt < ATTEMPTS - 1:
                time.sleep(PAUSE_S * 2**attempt)
        return False
    finally:
        conn.close()
