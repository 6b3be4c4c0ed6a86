"""Bulk ingest that fails midway: a real file-size limit (a full disk), a killed import. Nothing half-written."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

import stratamem as sm

# The process may write 64 KiB beyond the files' sizes (RLIMIT_FSIZE: writes past it fail with EFBIG, as
# on a full disk), then tries a batch far larger than that; then the limit is lifted and it writes again.
FULL_DISK = """
import json, os, resource, signal, sys
import stratamem as sm
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
db = sys.argv[1]
store = sm.open_store(db)
s = store.session("bulk")
s.save_many([{"key": f"a{i}", "content": f"first batch {i}"} for i in range(100)])
store.backend._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
limit = os.path.getsize(db) + 64 * 1024
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
big = [{"key": f"b{i}", "content": f"second batch item {i} " + "filler words " * 40} for i in range(3000)]
try:
    s.save_many(big)
    outcome = {"fitted": True}
except sm.errors.StratamemError as exc:
    outcome = {"code": exc.code, "message": exc.message}
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
outcome["after"] = len(s.save_many(big[:10]))
print(json.dumps(outcome), flush=True)
"""

# An import paused after its records and their postings are written inside the transaction (before its
# audit events), announced, then killed.
IMPORT = """
import sys, time
import stratamem as sm
from stratamem.storage.sqlite.deferred_index import PendingIndex
with sm.open_store(":memory:") as source:
    source.session("a").save_many([{"key": f"k{i}", "content": f"note {i}"} for i in range(1000)])
    memories = list(source.export())
store = sm.open_store(sys.argv[1])
store.session("a").save("kept", "written before the import")
real = PendingIndex.flush
def slow(self, conn):
    real(self, conn)
    print("midway", flush=True)
    time.sleep(60)
PendingIndex.flush = slow
store.import_memories(memories)
print("imported", flush=True)
"""


def _integrity(db: str) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        orphans = "SELECT count(*) FROM postings WHERE memory_id NOT IN (SELECT id FROM memories)"
        assert conn.execute(orphans).fetchone()[0] == 0
    finally:
        conn.close()


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE (POSIX)")
def test_a_full_disk_during_a_batch_is_a_storage_error_and_writes_nothing(tmp_path):
    db = str(tmp_path / "full.db")
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, db], capture_output=True, text=True, timeout=300, check=True
    )
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome.get("code") == "STORAGE_ERROR", outcome
    assert "full" in outcome["message"] or "I/O" in outcome["message"]
    assert outcome["after"] == 10  # the store stays usable once there is room again
    with sm.open_store(db) as store:
        keys = {m.key for m in store.session("bulk").list(limit=200)}
        assert keys == {f"a{i}" for i in range(100)} | {f"b{i}" for i in range(10)}
        saves = [e for e in store.audit_events(limit=1000) if e.operation == "save"]
        assert len(saves) == 110 and store.verify_audit() is None
    _integrity(db)


def test_sigkill_in_the_middle_of_an_import_imports_nothing(tmp_path):
    db = str(tmp_path / "import.db")
    proc = subprocess.Popen([sys.executable, "-c", IMPORT, db], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line == "midway", line
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    with sm.open_store(db) as store:
        assert [m.key for m in store.session("a").list()] == ["kept"]
        assert not [e for e in store.audit_events() if e.operation.startswith("import")]
        assert store.verify_audit() is None
    _integrity(db)
