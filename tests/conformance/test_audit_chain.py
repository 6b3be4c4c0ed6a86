"""The audit log as a hash chain: every operation appends one event, in order, and the chain verifies.

``verify_audit`` answers None for an intact chain (from the start, or from an anchor taken earlier),
``audit_tip`` names the newest event, and no event carries memory content.
"""

from __future__ import annotations

from datetime import timedelta

from stratamem import Level
from stratamem.audit import GENESIS
from stratamem.storage import audit_store

SECRET = "zebra-secret-7731"


def test_the_chain_is_gapless_ordered_and_verifies(store):
    assert audit_store.tip(store.backend) == (0, GENESIS)
    assert store.verify_audit() is None
    s = store.session("a")
    s.save("k", f"{SECRET} one")
    anchor = store.audit_anchor()
    s.escalate(Level.INTERNAL, "x")
    s.save("k", f"{SECRET} two")
    s.get("k")
    s.list()
    s.search(SECRET)
    s.delete("k")
    store.purge(before=store.now() + timedelta(seconds=1))
    events = store.audit_events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.prev_hash for e in events] == [GENESIS] + [e.hash for e in events[:-1]]
    assert audit_store.tip(store.backend) == (events[-1].seq, events[-1].hash)
    after = [e.operation for e in events if e.seq > anchor.seq]
    assert after == ["escalate", "save", "get", "list", "search", "delete", "purge.turns", "purge"]
    assert all(SECRET not in repr(e) for e in events)
    assert store.verify_audit() is None
    assert store.verify_audit(anchor) is None


def test_times_follow_the_store_clock(make_store, clock):
    store = make_store(clock=clock)
    s = store.session("a")
    s.save("k", "v")
    clock.advance(60)
    s.get("k")
    save, get = [e for e in store.audit_events() if e.operation in ("save", "get")]
    assert get.time - save.time >= timedelta(seconds=60)
