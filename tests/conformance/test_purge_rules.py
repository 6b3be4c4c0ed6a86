"""Purge: hard-deletes only what is soft-deleted or expired before the cut-off, for one agent or all; audited."""

from datetime import timedelta


def test_purge_respects_cutoff_and_agent(store):
    s = store.session("main")
    other = store.session("other")
    s.save("a", "x")
    other.save("b", "y")
    s.delete("a")
    other.delete("b")
    now = store.now()
    assert store.purge(before=now - timedelta(days=1)) == 0
    assert store.purge(before=now + timedelta(seconds=1), agent_id="main") == 1
    assert store.purge(before=now + timedelta(seconds=1)) == 1
    assert store.audit_events()[-1].operation == "purge"


def test_purge_keeps_live_and_unexpired(store):
    s = store.session("main")
    s.save("live", "stays")
    s.save("ttl", "stays too", ttl=3600)
    assert store.purge(before=store.now() + timedelta(days=1)) == 0
    assert {m.key for m in s.list()} == {"live", "ttl"}


def test_purged_rows_leave_the_dump(make_store, clock):
    store = make_store(clock=clock)
    s = store.session("main")
    s.save("gone", "soft-deleted")
    s.delete("gone")
    s.save("brief", "expiring", ttl=1)
    s.save("kept", "live")
    clock.advance(10)
    assert store.purge(before=store.now() + timedelta(seconds=1)) == 2
    keys = [row["key"] for table, row in store.backend.dump() if table == "memories"]
    assert keys == ["kept"]
    assert store.verify_audit() is None
