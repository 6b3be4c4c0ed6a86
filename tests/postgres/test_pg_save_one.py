"""Migration 10 (``save.SM_SAVE_ONE``): a single save is ``sm_save_one``, the batch function's save from scalars.

What must hold: a single save is that one statement; it writes exactly what ``sm_save`` writes for the
same save (versions, postings, statistics, shadowing flags, vector marks, audit events), across new keys,
updates in place, expired versions, levels and versions without recorded terms; its chain verifies with
the reference hash; it runs under row-level security with the caller's rights; single saves and
batches of one agent's shared terms and keys run concurrently without a deadlock; a store written
under version 9 migrates and keeps working.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable

import pg_server
import psycopg
import pytest
from pg_support import (
    deadlocks,
    open_pg,
    schema_of,
    security_definer,
    superuser,
    url_at_version,
    wait_for_save_backends,
)
from test_pg_concurrency import assert_index_consistent
from test_pg_save import HOSTILE_KEYS, derived, rebuilt

import stratamem as sm
from stratamem.audit import event_hash
from stratamem.storage.postgres import schema as pg_schema


def _statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    sent: list[str] = []
    main = threading.current_thread()
    real = psycopg.Connection.execute

    def counting(self, query, *args, **kwargs):
        if threading.current_thread() is main:
            sent.append(str(query)[:40])
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", counting)
    return sent


def test_a_single_save_is_one_sm_save_one_statement_and_a_batch_is_sm_save(monkeypatch):
    store = open_pg()
    s = store.session("a")
    s.save("warm", "the pool is ready")
    sent = _statements(monkeypatch)
    s.save("k", "one statement")
    s.save("k", "one statement, replacing the version")
    s.save_many([{"key": "one", "content": "a batch of one is a single save"}])
    s.save_many([{"key": "twice", "content": "first"}, {"key": "twice", "content": "second"}])
    monkeypatch.undo()
    assert [q.split("(")[0] for q in sent] == ["SELECT * FROM sm_save_one"] * 3 + ["SELECT * FROM sm_save"]
    assert s.get("twice").content == "second" and store.verify_audit() is None
    store.close()


def _scenario(store: sm.Store, clock) -> None:
    """Every kind of single save: new, in place, expired, other levels, hostile text, no recorded terms."""
    a = store.session("a", session_id="s-low")
    a.save("k1", "apples pears and plums", tags=["fruit", "x"], category="notes")
    a.save("k2", "short lived pears", ttl=5)
    a.save("k1", "apples again, no plums")  # in place: postings and statistics netted
    a.save("k1", "apples again, no plums")  # in place, the same terms: nothing netted to zero
    a.save("k3", "!!! ???")  # punctuation: no terms from the content
    a.save("k3", "now cherries")
    clock.advance(10)
    a.save("k2", "pears after the expiry")  # the expired version retired, a new one inserted
    up = store.session("a", session_id="s-high")
    up.escalate(sm.Level.CONFIDENTIAL, "up")
    up.save("k1", "confidential apples shadow the public ones")
    a.save("k1", "public apples under a higher version")  # the new version's own flag comes from above
    for key in HOSTILE_KEYS:
        a.save(key, f"content of {key} with NUL \x00 and \u2028 inside")
    with superuser() as su:  # a version written before terms were recorded (store migrated from 7)
        su.execute(f"UPDATE {schema_of(store)}.memories SET terms = NULL WHERE key = 'k3'")
    a.save("k3", "cherries replaced")
    a.delete("k2")
    a.save("k2", "pears again after a delete")
    peer = store.session("b", peers=["a"], session_id="s-peer")
    peer.save("k1", "another agent's apples")


def _written(store: sm.Store) -> dict[str, list[tuple]]:
    """Everything a save writes, without what is random by design (lineage ids) or the chain's hashes."""
    s = schema_of(store)
    queries = {
        "memories": f"SELECT id, agent_id, key, level, content, tags, category, session_id, created_us, updated_us, "
        f"expires_us, deleted_us, length, shadowable, terms FROM {s}.memories ORDER BY id",
        "postings": f"SELECT * FROM {s}.postings ORDER BY term, agent_id, level, memory_id",
        "term_stats": f"SELECT * FROM {s}.term_stats ORDER BY term, agent_id, level",
        "part_stats": f"SELECT * FROM {s}.part_stats ORDER BY agent_id, level",
        "vectors": f"SELECT memory_id, agent_id, level, live, model FROM {s}.memory_vectors ORDER BY memory_id",
        "audit": f"SELECT seq, at_us, session_id, agent_id, taint, operation, keys, levels, outcome, detail "
        f"FROM {s}.audit ORDER BY seq",
    }
    with superuser() as su:
        return {name: su.execute(sql).fetchall() for name, sql in queries.items()}


def test_a_single_save_writes_exactly_what_the_batch_function_writes():
    from conftest import FakeClock

    stores = []
    for one in (True, False):
        clock = FakeClock()
        store = open_pg(clock=clock)
        store.backend._save_one = one  # False: every save through sm_save, as before migration 10
        _scenario(store, clock)
        assert store.verify_audit() is None
        assert derived(schema_of(store)) == rebuilt(store)
        assert_index_consistent(store)
        stores.append(store)
    single, batch = (_written(store) for store in stores)
    for name in single:
        assert single[name] == batch[name], name
    for store in stores:
        store.close()


def test_the_chain_of_single_saves_is_the_reference_one():
    store = open_pg()
    s = store.session('ag"ent \u00e9\U0001f600', session_id='sess "\\ \u00fc')
    for key in HOSTILE_KEYS + HOSTILE_KEYS[:2]:
        s.save(key, "words " + key)
    s.save_many([{"key": f"b{i}", "content": "a batch between single saves"} for i in range(3)])
    s.save("last", "after the batch")
    events = [e for e in store.audit_events(limit=100) if e.operation == "save"]
    assert len(events) == len(HOSTILE_KEYS) + 2 + 3 + 1 and store.verify_audit() is None
    for prev, event in itertools.pairwise(events):
        assert event.seq == prev.seq + 1 and event.prev_hash == prev.hash
        assert event.hash == event_hash(event.seq, event.time, event, event.prev_hash)
    assert [e.keys[0] for e in events[: len(HOSTILE_KEYS)]] == HOSTILE_KEYS
    assert {e.lineage_ids[0] for e in events if e.keys[0] == HOSTILE_KEYS[0]} == {
        s.get(HOSTILE_KEYS[0]).lineage_id
    }
    store.close()


def test_sm_save_one_runs_with_the_callers_rights_under_row_level_security():
    store = open_pg()
    s = store.session("a")
    s.save("before", "written while the policies allow it")
    schema = schema_of(store)
    restore = "((SELECT sm_operator()) OR (level = (SELECT sm_taint()) AND agent_id = (SELECT sm_agent())))"
    assert not security_definer(schema, "sm_save_one")
    for table, policy in (("memories", "memories_insert"), ("postings", "postings_insert")):
        with superuser() as su:  # a policy that admits no row stops the function's write, and all of it
            su.execute(f"ALTER POLICY {policy} ON {schema}.{table} WITH CHECK (false)")
        try:
            with pytest.raises(sm.errors.StorageError, match="row-level security"):
                s.save("after", "refused by the policy the function runs under")
        finally:
            with superuser() as su:
                su.execute(f"SET search_path TO {schema}")
                su.execute(f"ALTER POLICY {policy} ON {schema}.{table} WITH CHECK {restore}")
    assert [m.key for m in s.list()] == ["before"] and store.verify_audit() is None
    assert derived(schema) == rebuilt(store)
    # The function writes at the session's taint, whatever the caller claims: a higher session's save is
    # invisible below it, a lower one is shadowed above it.
    high = store.session("a")
    high.escalate(sm.Level.RESTRICTED, "up")
    high.save("before", "restricted")
    assert s.get("before").level == sm.Level.PUBLIC and high.get("before").level == sm.Level.RESTRICTED
    store.close()


def _concurrently(workers: list[Callable[[], None]]) -> None:
    errors: list[BaseException] = []

    def run(work: Callable[[], None]) -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors


def test_single_saves_and_batches_over_shared_terms_and_keys_do_not_deadlock():
    store = sm.open_store(pg_server.with_params(pg_server.fresh_url(), pool_max="8"))
    words = [f"w{i}" for i in range(40)]

    def singles(n: int) -> Callable[[], None]:
        def work() -> None:
            rng = random.Random(n)
            s = store.session("agent")
            for _ in range(60):
                s.save(f"k{rng.randrange(50)}", " ".join(rng.sample(words, 10)))

        return work

    def batches(n: int) -> Callable[[], None]:
        def work() -> None:
            rng = random.Random(100 + n)
            s = store.session("agent")
            for _ in range(4):
                keys = rng.sample(range(50), 30)
                s.save_many([{"key": f"k{k}", "content": " ".join(rng.sample(words, 10))} for k in keys])

        return work

    before = deadlocks()
    _concurrently([singles(0), singles(1), singles(2), batches(0)])
    store.close()
    wait_for_save_backends()  # the pool's backends report their counters as they exit
    assert deadlocks() == before
    with sm.open_store(store.url) as again:
        assert again.verify_audit() is None
        assert len([e for e in again.audit_events(limit=5000) if e.operation == "save"]) == 3 * 60 + 4 * 30
        assert_index_consistent(again)
        assert derived(schema_of(again)) == rebuilt(again)


def test_a_store_written_under_version_9_migrates_and_single_saves_use_the_new_function(monkeypatch):
    url, schema = url_at_version(monkeypatch, 9)
    with sm.open_store(url) as old:
        s = old.session("a")
        s.save_many([{"key": f"k{i}", "content": f"old words {i}"} for i in range(20)])
        s.save("k1", "replaced under version 9")
        up = old.session("a")
        up.escalate(sm.Level.INTERNAL, "up")
        up.save("k2", "internal version")
    monkeypatch.undo()
    with superuser() as su:
        assert su.execute(
            f"SELECT to_regprocedure('{schema}.sm_save_one(text, text, bigint, text, bigint, integer, "
            "text, text, text, text, bigint, text, integer, text, text)')"
        ).fetchone() == (None,)
    sent = _statements(monkeypatch)
    with sm.open_store(url) as store:
        with superuser() as su:
            version = su.execute(f"SELECT value FROM {schema}.meta WHERE name = 'schema_version'").fetchone()
        assert version == (str(pg_schema.LATEST),)
        s = store.session("a")
        s.save("k3", "replaced under version 10")
        s.save("new", "a new key under version 10")
        assert [q for q in sent if "sm_save" in q] == ["SELECT * FROM sm_save_one(%b::text, %b::"] * 2
        monkeypatch.undo()
        assert (
            s.get("k1").content == "replaced under version 9"
            and s.get("k3").content == "replaced under version 10"
        )
        assert [h.memory.key for h in s.search("replaced")] in (["k1", "k3"], ["k3", "k1"])
        assert store.verify_audit() is None
        assert derived(schema) == rebuilt(store)
        assert_index_consistent(store)
