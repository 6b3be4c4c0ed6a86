"""The servers' shared bookkeeping (``storage/server_state.py``) on every backend: kept, expired, purged."""

from __future__ import annotations

from datetime import timedelta

import pytest

from stratamem.storage import server_state
from stratamem.storage.sql.rows import to_us


def test_entries_are_kept_replaced_dropped_and_expire(store):
    backend, now = store.backend, store.now()
    key = server_state.digest("console", "console-id")
    later = to_us(now + timedelta(hours=1))
    first = server_state.Entry("ops", '{"clearance": "INTERNAL"}', later)
    assert server_state.get(backend, "console", key, now) is None
    assert server_state.put(backend, "console", key, first, now) == first
    assert server_state.get(backend, "console", key, now) == first
    # a live entry is not replaced when the writer asks to keep it (the first answer wins)
    second = server_state.Entry("ops", '{"clearance": "PUBLIC"}', later)
    assert server_state.put(backend, "console", key, second, now, replace=False) == first
    assert server_state.put(backend, "console", key, second, now) == second
    # past its expiry it reads as absent, and is overwritten even by a keeping writer
    expired = now + timedelta(hours=2)
    assert server_state.get(backend, "console", key, expired) is None
    third = server_state.Entry("ops", "{}", to_us(expired + timedelta(hours=1)))
    assert server_state.put(backend, "console", key, third, expired, replace=False) == third
    server_state.drop(backend, "console", key, now)
    assert server_state.get(backend, "console", key, now) is None


def test_purge_removes_only_expired_entries(store):
    backend, now = store.backend, store.now()
    for name, hours in (("old", 1), ("young", 48)):
        entry = server_state.Entry("alice", "{}", to_us(now + timedelta(hours=hours)))
        server_state.put(
            backend, "idempotency", server_state.digest("idempotency", "alice", name), entry, now
        )
    assert server_state.purge(backend, now) == 0
    store.clock.advance(timedelta(hours=2).total_seconds())
    store.purge(before=store.now())  # the store's purge removes what expired by its time
    old, young = (server_state.digest("idempotency", "alice", name) for name in ("old", "young"))
    assert server_state.get(backend, "idempotency", old, now) is None  # gone, not merely expired
    assert server_state.get(backend, "idempotency", young, now) is not None


def test_digests_separate_kinds_principals_and_parts():
    d = server_state.digest
    assert d("idempotency", "alice", "k") != d("idempotency", "bob", "k")
    assert d("idempotency", "a", "bk") != d("idempotency", "ab", "k")
    assert d("mcp", "x") != d("console", "x")
    with pytest.raises(ValueError):
        d("other", "x")
