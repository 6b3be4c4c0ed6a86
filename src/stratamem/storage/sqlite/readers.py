"""Read connections for the SQLite backend: one per thread, so readers never queue behind a writer.

In WAL mode a reader on its own connection sees the last committed snapshot
while a writer holds its write transaction, so a server's worker threads can
search at once instead of taking turns on one connection. Writes stay on the
backend's single write connection behind its lock (SQLite admits one writer
at a time anyway). Read connections are ``query_only``: a bug that tried to
write through one fails instead of bypassing the write path.

An in-memory database is private to its connection, so it has no readers:
the backend reads on its write connection, as before.
"""

from __future__ import annotations

import sqlite3
import threading

# No memory map. In WAL mode a read transaction that finds the database changed (every read here follows
# some write: reads append audit events) drops its page cache and, when the file is memory-mapped, unmaps
# and remaps the whole file, paying a page fault for every page it touches again. Measured idle on a 100k
# graph: neighbours depth 2 at p50 2.6 ms without the map against 6.5 ms with it (the first statement of
# each read cost 1.5 ms of CPU); REST searches with 8 clients at 10k memories ran at the same rate
# (170 requests/s) either way.
MMAP_BYTES = 0


class ReadConnections:
    """Lazily opened, thread-local read connections to one database file; all closed together."""

    def __init__(self, path: str, busy_timeout_s: float) -> None:
        self._path = path
        self._busy_ms = int(busy_timeout_s * 1000)
        self._local = threading.local()
        self._opened: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._guard = threading.Lock()
        self._closed = False

    def get(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self._path, isolation_level=None, timeout=self._busy_ms / 1000, check_same_thread=False
            )
            for pragma in (
                f"busy_timeout = {self._busy_ms}",
                "query_only = ON",
                "temp_store = MEMORY",
                "cache_size = -16384",
                f"mmap_size = {MMAP_BYTES}",  # off: see MMAP_BYTES
            ):
                conn.execute(f"PRAGMA {pragma}")
            with self._guard:
                if self._closed:
                    conn.close()
                    raise sqlite3.ProgrammingError("the store is closed")
                # a thread that has ended will not read again: its connection is closed, not kept open
                ended = [c for t, c in self._opened if not t.is_alive()]
                self._opened = [(t, c) for t, c in self._opened if t.is_alive()]
                self._opened.append((threading.current_thread(), conn))
            for old in ended:
                _close(old)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        with self._guard:
            self._closed = True
            opened, self._opened = self._opened, []
        for _, conn in opened:
            _close(conn)


def _close(conn: sqlite3.Connection) -> None:
    try:
        conn.close()
    except sqlite3.Error:
        pass
