"""Readers on a SQLite file are never blocked by a writer: each thread reads on its own WAL connection.

Before, every read and write in a process took turns on one connection behind
one lock, so a REST server answered one query at a time and a long write
(a save_many batch, an import) stalled every search.
"""

from __future__ import annotations

import threading

import stratamem as sm
from stratamem.storage.sqlite.backend import SQLiteBackend

LIVENESS_S = 60  # generous: only a reader that is really blocked (until the writer lets go) waits this long


def test_a_reader_proceeds_while_a_writer_holds_its_transaction(tmp_path):
    with sm.open_store(str(tmp_path / "m.db")) as store:
        s = store.session("a")
        s.save("old", "committed before the writer began")
        backend: SQLiteBackend = store.backend
        holding, release, done = threading.Event(), threading.Event(), threading.Event()

        def writer() -> None:
            with backend._tx(write=True) as conn:
                conn.execute("UPDATE memories SET content = 'uncommitted' WHERE key = 'old'")
                holding.set()
                release.wait(LIVENESS_S)
            done.set()

        thread = threading.Thread(target=writer)
        thread.start()
        assert holding.wait(LIVENESS_S)
        seen: list = []

        def read() -> None:
            record = backend.session_record(s.id)  # the public read path, no write afterwards
            with backend._tx(write=False) as conn:
                content = conn.execute("SELECT content FROM memories WHERE key = 'old'").fetchone()[0]
            seen.append((record.agent_id, content))

        reader = threading.Thread(target=read)
        reader.start()
        reader.join(LIVENESS_S)
        finished_during_write = not reader.is_alive() and not done.is_set()
        release.set()
        thread.join()
        reader.join()
        assert finished_during_write, "the reader waited for the writer"
        assert seen == [("a", "committed before the writer began")]  # the last committed snapshot
        assert s.get("old").content == "uncommitted"  # and the writer's change once it committed


def test_in_memory_stores_read_on_their_one_connection():
    with sm.open_store(":memory:") as store:
        store.session("a").save_many([{"key": "k", "content": "c"}])
        assert store.backend._readers is None and store.session("a").get("k").content == "c"


def test_read_connections_of_ended_threads_are_closed(tmp_path):
    with sm.open_store(str(tmp_path / "m.db")) as store:
        s = store.session("a")
        for _ in range(20):
            t = threading.Thread(target=lambda: store.backend.session_record(s.id))
            t.start()
            t.join()
        assert len(store.backend._readers._opened) <= 1
