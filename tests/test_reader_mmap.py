"""SQLite read connections share the file through a memory map instead of warming private page caches.

A server's worker threads (up to 40, replaced when idle) each read on a connection of their own; with
only a private page cache each, every new thread re-read the store from cold (``bench/bench_server.py``).
"""

from __future__ import annotations

import threading

import stratamem as sm
from stratamem.storage.sqlite_readers import MMAP_BYTES


def test_every_thread_reads_through_the_shared_map(tmp_path):
    with sm.open_store(str(tmp_path / "m.db")) as store:
        s = store.session("a")
        s.save("k", "mapped pages")
        sizes: list[int] = []

        def read() -> None:
            assert [h.memory.key for h in s.search("mapped")] == ["k"]
            sizes.append(store.backend._readers.get().execute("PRAGMA mmap_size").fetchone()[0])

        threads = [threading.Thread(target=read) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sizes == [MMAP_BYTES] * 3
