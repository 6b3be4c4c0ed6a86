"""Acknowledged writes survive SIGKILL; several processes share one file without losing writes."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

import stratamem as sm

WRITER = """
import sys, stratamem as sm
store = sm.open_store(sys.argv[1])
s = store.session(sys.argv[2])
for i in range(int(sys.argv[3])):
    s.save(f"{sys.argv[2]}-{i}", f"note number {i} from {sys.argv[2]}")
    if i % 3 == 0:
        s.delete(f"{sys.argv[2]}-{i}")
        print("deleted", i, flush=True)
    else:
        print("saved", i, flush=True)
"""


@pytest.mark.parametrize("kind", ["sqlite", "markdown"])
def test_acknowledged_writes_survive_sigkill(tmp_path, kind):
    """A writer killed from outside at arbitrary points; the Markdown store's files must agree too."""
    db = str(tmp_path / "kill.db") if kind == "sqlite" else f"markdown://{tmp_path / 'kill-md'}"
    for round_no, delay in enumerate((0.3, 0.6, 0.9)):
        agent = f"w{round_no}"
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, db, agent, "100000"], stdout=subprocess.PIPE, text=True
        )
        time.sleep(delay)
        acknowledged = []
        deadline = time.time() + 30
        while len(acknowledged) < 5 and time.time() < deadline:
            acknowledged.append(proc.stdout.readline().split())
        os.kill(proc.pid, signal.SIGKILL)
        acknowledged += [line.split() for line in proc.stdout.read().splitlines()]
        proc.wait()
        acknowledged = [a for a in acknowledged if len(a) == 2]
        assert acknowledged, "the writer never acknowledged a write"
        with sm.open_store(db) as store:
            s = store.session(agent)
            for action, i in acknowledged:
                got = s.get(f"{agent}-{i}")
                if action == "saved":
                    assert got is not None and got.content == f"note number {i} from {agent}"
                else:
                    assert got is None
            assert store.verify_audit() is None
            if kind == "markdown":  # the files are the truth for content: every acknowledged save is in them
                text = "".join(p.read_text() for p in (tmp_path / "kill-md" / agent).rglob("*.md"))
                for action, i in acknowledged:
                    assert (f"## {agent}-{i}\n" in text) == (action == "saved")
        sidecar = db if kind == "sqlite" else str(tmp_path / "kill-md" / ".stratamem" / "index.db")
        conn = sqlite3.connect(sidecar)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()


def test_concurrent_processes_lose_nothing(tmp_path):
    db = str(tmp_path / "shared.db")
    n_proc, n_writes = 4, 60
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, db, f"p{k}", str(n_writes)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(n_proc)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "locked" not in err
        assert len(out.splitlines()) == n_writes
    with sm.open_store(db) as store:
        for k in range(n_proc):
            s = store.session(f"p{k}")
            keys = {m.key for m in s.list()}
            assert keys == {f"p{k}-{i}" for i in range(n_writes) if i % 3}
        assert store.verify_audit() is None
        seqs = [e.seq for e in store.audit_events()]
        assert seqs == list(range(1, len(seqs) + 1))
