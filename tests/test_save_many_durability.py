"""A process SIGKILLed in the middle of a save_many leaves nothing of the batch, or all of it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys

import stratamem as sm
from stratamem.storage import audit_store

# Writes batch 0 whole, then batch 1 with a pause inside its transaction (after its 1,000 rows and their
# postings are written, before its audit events), announcing each step so the test kills it at a known point.
WRITER = """
import sys, time, stratamem as sm
from stratamem.storage.sqlite.deferred_index import PendingIndex
store = sm.open_store(sys.argv[1])
s = store.session("bulk")
real = PendingIndex.flush
count = [0]
def slow(self, conn):
    real(self, conn)
    count[0] += 1
    if count[0] == 2:
        print("midway", flush=True)
        time.sleep(60)
PendingIndex.flush = slow
for b in range(2):
    s.save_many([{"key": f"b{b}-{i}", "content": f"batch {b} item {i}"} for i in range(1000)])
    print("committed", b, flush=True)
"""


def test_sigkill_in_the_middle_of_a_batch_leaves_none_of_it(tmp_path):
    db = str(tmp_path / "batch.db")
    proc = subprocess.Popen([sys.executable, "-c", WRITER, db], stdout=subprocess.PIPE, text=True)
    lines = []
    while not lines or lines[-1] != "midway":
        line = proc.stdout.readline()
        assert line, "the writer ended before reaching the middle of its second batch"
        lines.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert lines == ["committed 0", "midway"]
    with sm.open_store(db) as store:
        keys = {m.key for m in store.session("bulk").list()}
        assert keys == {f"b0-{i}" for i in range(1000)}  # the acknowledged batch whole, nothing of the other
        assert store.verify_audit() is None
        saves = [e for e in store.audit_events() if e.operation == "save"]
        assert len(saves) == 1000
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert (
        conn.execute(
            "SELECT count(*) FROM postings WHERE memory_id NOT IN (SELECT id FROM memories)"
        ).fetchone()[0]
        == 0
    )
    conn.close()


def test_database_full_during_a_batch_writes_nothing(tmp_path):
    """A size limit reached halfway through a batch (SQLITE_FULL, as on a full disk): a StorageError,
    nothing of the batch, the store still usable and its audit chain whole."""
    with sm.open_store(str(tmp_path / "full.db")) as store:
        s = store.session("bulk")
        s.save_many([{"key": f"a{i}", "content": f"first batch {i}"} for i in range(100)])
        conn = store.backend._conn
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 20}")
        before = audit_store.tip(store.backend)
        big = [
            {"key": f"b{i}", "content": f"second batch item {i} " + "filler words " * 40} for i in range(2000)
        ]
        try:
            s.save_many(big)
        except sm.errors.StorageError as exc:
            assert "full" in str(exc)
        else:
            raise AssertionError("the batch fitted; the limit did not bite")
        assert audit_store.tip(store.backend) == before
        assert {m.key for m in s.list()} == {f"a{i}" for i in range(100)}
        conn.execute("PRAGMA max_page_count = 1073741823")
        assert len(s.save_many(big[:10])) == 10 and store.verify_audit() is None
