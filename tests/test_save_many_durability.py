"""A process SIGKILLed in the middle of a save_many leaves nothing of the batch, or all of it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys

import stratamem as sm

# Writes batch 0 whole, then batch 1 with a pause halfway through its transaction (after 500 records are
# written), announcing each step so the test kills it at a known point.
WRITER = """
import sys, time, stratamem as sm
from stratamem.storage.sqlite import SQLiteBackend
store = sm.open_store(sys.argv[1])
s = store.session("bulk")
real = SQLiteBackend._write_version
count = [0]
def slow(self, *args, **kwargs):
    count[0] += 1
    if count[0] == 1500:
        print("midway", flush=True)
        time.sleep(60)
    return real(self, *args, **kwargs)
SQLiteBackend._write_version = slow
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
    assert conn.execute("SELECT count(*) FROM postings WHERE memory_id NOT IN (SELECT id FROM memories)"
                        ).fetchone()[0] == 0
    conn.close()
