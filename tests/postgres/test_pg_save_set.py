"""Migration 9 (``save.SM_SAVE``): the batch path with no per-row work that grows with the store.

What it changed and what must not have: the chain of a batch built from set-based parts verifies and
equals ``audit.event_hash``; concurrent batches over shared terms and keys finish without a deadlock and
leave exact statistics; the shadowing refresh is a lookup per key, not a pass over the table; a store
written under version 8 migrates and keeps working; a bad item stops the batch before the server.
"""

from __future__ import annotations

import itertools
import json
import random
import threading

import pg_server
import psycopg
import pytest
from pg_support import deadlocks, open_pg, schema_of, superuser, url_at_version, wait_for_save_backends
from test_pg_concurrency import assert_index_consistent
from test_pg_save import derived, rebuilt

import stratamem as sm
from stratamem.audit import event_hash
from stratamem.errors import ValidationError
from stratamem.storage import audit_store
from stratamem.storage.postgres import schema as pg_schema


def test_the_chain_of_a_batch_verifies_and_each_hash_is_the_reference_one():
    store = open_pg()
    s = store.session('ag"ent \u00e9')
    s.save("first", "a single save before the batch")
    s.save_many([{"key": f'k{i} \u65e5 "q" \\', "content": f"batch item {i}"} for i in range(300)])
    s.save("last", "a single save after it")
    events = [e for e in store.audit_events(limit=1000) if e.operation == "save"]
    assert len(events) == 302 and store.verify_audit() is None
    for prev, event in itertools.pairwise(events):
        assert event.seq == prev.seq + 1 and event.prev_hash == prev.hash
        assert event.hash == event_hash(event.seq, event.time, event, event.prev_hash)
    assert [e.keys for e in events[1:4]] == [(f'k{i} \u65e5 "q" \\',) for i in range(3)]
    store.close()


def test_one_bad_item_among_many_writes_nothing_and_sends_nothing(monkeypatch):
    store = open_pg()
    s = store.session("a")
    s.save("kept", "before the batch")
    tip = audit_store.tip(store.backend)
    items: list[dict[str, object]] = [{"key": f"k{i}", "content": f"item {i}"} for i in range(2000)]
    items[1234] = {"key": "bad\x00key", "content": "a control character in the key"}
    sent: list[str] = []
    real = psycopg.Connection.execute

    def counting(self, query, *args, **kwargs):
        sent.append(str(query)[:40])
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", counting)
    with pytest.raises(ValidationError, match="item 1234"):
        s.save_many(items)
    assert not [q for q in sent if "sm_save" in q]
    monkeypatch.undo()
    assert audit_store.tip(store.backend) == tip and [m.key for m in s.list()] == ["kept"]
    store.close()


def test_concurrent_batches_over_shared_terms_and_keys_do_not_deadlock():
    store = sm.open_store(pg_server.with_params(pg_server.fresh_url(), pool_max="8"))
    words = [f"w{i}" for i in range(60)]
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        rng = random.Random(n)
        try:
            s = store.session(f"agent{n % 2}")  # two writers per agent: shared keys, shared term rows
            for b in range(6):
                keys = rng.sample(range(120), 80)  # overlapping keys, each batch in its own order
                s.save_many(
                    [{"key": f"k{k}", "content": " ".join(rng.sample(words, 12)) + f" b{b}"} for k in keys]
                )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    before = deadlocks()
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    store.close()  # the pool's backends exit and report their counters (a deadlock is retried, so only counted)
    wait_for_save_backends()
    assert deadlocks() == before
    with sm.open_store(store.url) as again:
        assert again.verify_audit() is None
        assert len([e for e in again.audit_events(limit=5000) if e.operation == "save"]) == 4 * 6 * 80
        assert_index_consistent(again)


def _refresh_buffers(store: sm.Store, keys: list[str]) -> int:
    """Shared buffers the shadowing refresh touches for these keys (nested statements included)."""
    with superuser() as su:
        su.execute(f"SET search_path TO {schema_of(store)}")
        su.execute("SELECT set_config('stratamem.operator', 'on', false)")
        plan = su.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT sm_refresh_shadowable(%s::text[], %s::text[])",
            (["a"] * len(keys), keys),
        ).fetchone()[0]
    top = plan[0]["Plan"]
    return int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])


def test_the_shadowing_refresh_looks_keys_up_instead_of_scanning_the_store():
    store = open_pg(max_batch=10_000)
    s = store.session("a")
    keys = [f"k{i}" for i in range(100)]
    s.save_many([{"key": k, "content": f"first {k}"} for k in keys])
    small = _refresh_buffers(store, keys)
    s.save_many([{"key": f"other{i}", "content": f"padding row {i} " + "x" * 300} for i in range(8000)])
    large = _refresh_buffers(store, keys)
    # One index probe per key (a deeper index at most), never a pass over 8,000 more rows (~400 pages).
    assert large <= small + 2 * len(keys), (small, large)
    store.close()


def test_the_refresh_still_flags_and_unflags_lower_versions():
    store = open_pg()
    low = store.session("a")
    low.save_many([{"key": "k", "content": "public apples"}, {"key": "j", "content": "public pears"}])
    high = store.session("a")
    high.escalate(sm.Level.CONFIDENTIAL, "up")
    high.save_many([{"key": "k", "content": "confidential apples"}])
    assert [h.memory.content for h in high.search("apples")] == ["confidential apples"]
    assert derived(schema_of(store)) == rebuilt(store)
    high.delete("k")
    assert [h.memory.content for h in high.search("apples")] == ["public apples"]
    assert derived(schema_of(store)) == rebuilt(store)
    store.close()


def test_a_store_written_under_version_8_migrates_and_keeps_its_chain(monkeypatch):
    url, schema = url_at_version(monkeypatch, 8)
    with sm.open_store(url) as old:
        s = old.session("a")
        s.save_many([{"key": f"k{i}", "content": f"old words {i}"} for i in range(50)])
        up = old.session("a")
        up.escalate(sm.Level.INTERNAL, "up")
        up.save("k1", "internal version")
    monkeypatch.undo()
    with superuser() as su:
        assert su.execute(f"SELECT value FROM {schema}.meta WHERE name = 'schema_version'").fetchone() == (
            "8",
        )
    with sm.open_store(url) as store:
        with superuser() as su:
            version = su.execute(f"SELECT value FROM {schema}.meta WHERE name = 'schema_version'").fetchone()
            options = su.execute(
                "SELECT reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relname = 'term_stats'",
                (schema,),
            ).fetchone()
        assert version == (str(pg_schema.LATEST),) and "fillfactor=70" in options[0]
        s = store.session("a")
        s.save_many([{"key": f"k{i}", "content": f"new words {i}"} for i in range(0, 50, 2)])
        assert s.get("k2").content == "new words 2" and s.get("k3").content == "old words 3"
        assert store.verify_audit() is None
        assert derived(schema) == rebuilt(store)
        events = [e for e in store.audit_events(limit=1000) if e.operation == "save"]
        assert len(events) == 50 + 1 + 25
        assert json.loads(json.dumps(events[-1].keys)) == ["k48"]
