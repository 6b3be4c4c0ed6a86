"""SQLite read connections do not memory-map the file.

Every read transaction here follows a write (reads append audit events); in WAL mode SQLite then unmaps and
remaps a memory-mapped file and faults every page in again, which made graph traversals at 100k nodes 2.5x
slower and REST searches no faster (``storage/sqlite/readers.py``, ``bench/bench_server.py``). This pins the
choice on every reader thread.
"""

from __future__ import annotations

import threading

import stratamem as sm
from stratamem.storage.sqlite.readers import MMAP_BYTES


def test_no_reader_thread_maps_the_file(tmp_path):
    assert MMAP_BYTES == 0
    with sm.open_store(str(tmp_path / "m.db")) as store:
        s = store.session("a")
        s.save("k", "paged reads")
        sizes: list[int] = []

        def read() -> None:
            assert [h.memory.key for h in s.search("paged")] == ["k"]
            sizes.append(store.backend._readers.get().execute("PRAGMA mmap_size").fetchone()[0])

        threads = [threading.Thread(target=read) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sizes == [0] * 3
