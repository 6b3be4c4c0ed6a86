"""Many processes and threads writing and searching one PostgreSQL store at once: nothing is lost,
the derived statistics stay exact, and the audit hash chain stays one line."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading

from pg_support import open_pg, schema_of, superuser

import stratamem as sm

WRITER = """
import sys, stratamem as sm
store = sm.open_store(sys.argv[1])
s = store.session(sys.argv[2])
for i in range(int(sys.argv[3])):
    s.save(f"{sys.argv[2]}-{i}", f"note number {i} from {sys.argv[2]} about shared topics")
    if i % 3 == 0:
        s.delete(f"{sys.argv[2]}-{i}")
    s.search("shared topics note")
print("done", flush=True)
store.close()
"""


def assert_index_consistent(store: sm.Store) -> None:
    """part_stats equals a recount of the live rows; every live row has postings, no dead row has any;
    term_stats equals a recount of the postings."""
    schema = schema_of(store)
    with superuser() as conn:
        conn.execute(f"SET search_path TO {schema}")
        stats = set(conn.execute("SELECT agent_id, level, n, total_len FROM part_stats WHERE n <> 0"))
        recount = set(
            conn.execute(
                "SELECT agent_id, level, count(*), sum(length) FROM memories "
                "WHERE deleted_us IS NULL GROUP BY agent_id, level"
            )
        )
        assert stats == recount
        orphans = conn.execute(
            "SELECT count(*) FROM postings p LEFT JOIN memories m ON m.id = p.memory_id "
            "AND m.deleted_us IS NULL WHERE m.id IS NULL"
        ).fetchone()[0]
        unindexed = conn.execute(
            "SELECT count(*) FROM memories m WHERE m.deleted_us IS NULL AND NOT EXISTS "
            "(SELECT 1 FROM postings p WHERE p.memory_id = m.id)"
        ).fetchone()[0]
        assert (orphans, unindexed) == (0, 0)
        terms = set(conn.execute("SELECT term, agent_id, level, df FROM term_stats"))
        recount = set(
            conn.execute(
                "SELECT term, agent_id, level, count(*) FROM postings GROUP BY term, agent_id, level"
            )
        )
        assert terms == recount  # and no row at zero lingers


def assert_chain_linear(store: sm.Store, expected_events: int | None = None) -> None:
    events = store.audit_events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert all(later.prev_hash == earlier.hash for earlier, later in itertools.pairwise(events))
    assert store.verify_audit() is None
    if expected_events is not None:
        assert len(events) == expected_events


def test_processes_write_and_search_at_once_and_lose_nothing():
    store = open_pg()
    url = f"{store.url}"
    n_proc, n_writes = 6, 40
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, f"p{k}", str(n_writes)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(n_proc)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    deletes = len(range(0, n_writes, 3))
    assert_chain_linear(store, n_proc * (1 + n_writes + deletes + n_writes))
    for k in range(n_proc):
        s = store.session(f"p{k}")
        assert {m.key for m in s.list()} == {f"p{k}-{i}" for i in range(n_writes) if i % 3}
    assert_index_consistent(store)
    store.close()


def test_threads_share_one_store_and_contend_on_one_key():
    store = open_pg()
    writer = store.session("team")
    writer.escalate(sm.Level.INTERNAL, "team notes")
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            own = store.session(f"t{t}")
            for i in range(15):
                own.save(f"k{i}", f"thread {t} item {i} banana")
                writer.save("shared", f"last writer was thread {t} round {i} banana")
                assert len(own.search("banana", 50)) == i + 1
                if i % 5 == 4:
                    writer.save(f"t{t}-{i}", "a thread-specific note banana")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    listed = writer.list()
    assert len([m for m in listed if m.key == "shared"]) == 1
    assert len(listed) == 1 + 8 * 3
    assert [h.memory.key for h in writer.search("last writer")] == ["shared"]
    assert_index_consistent(store)
    assert_chain_linear(store)
    store.close()


def test_escalation_races_with_saves_never_write_below_the_committed_taint():
    """Saves read the session row FOR SHARE: none lands below a taint that was committed before it began."""
    store = open_pg()
    s = store.session("a")
    levels: list[tuple[sm.Level, sm.Level]] = []

    def saver() -> None:
        for i in range(40):
            before = s.taint
            saved = s.save(f"k{i}", "x")
            levels.append((before, saved.level))

    def escalator() -> None:
        for level in (sm.Level.INTERNAL, sm.Level.CONFIDENTIAL, sm.Level.RESTRICTED):
            s.escalate(level, "race")

    threads = [threading.Thread(target=saver), threading.Thread(target=escalator)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(saved >= before for before, saved in levels)
    assert s.taint == sm.Level.RESTRICTED
    assert_chain_linear(store)
    store.close()


KILLABLE = """
import sys, stratamem as sm
store = sm.open_store(sys.argv[1])
s = store.session(sys.argv[2])
for i in range(100000):
    s.save(f"k{i}", f"note {i}")
    print(i, flush=True)
"""


def test_acknowledged_writes_survive_a_killed_client():
    import os
    import signal

    store = open_pg()
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLABLE, store.url, "victim"], stdout=subprocess.PIPE, text=True
    )
    acknowledged = [proc.stdout.readline() for _ in range(30)]
    os.kill(proc.pid, signal.SIGKILL)
    acknowledged += proc.stdout.read().splitlines()
    proc.wait()
    done = [int(line) for line in acknowledged if line.strip()]
    s = store.session("victim")
    assert all(s.get(f"k{i}") is not None for i in done)
    assert store.verify_audit() is None
    store.close()
