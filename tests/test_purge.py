import os
from datetime import timedelta

from conftest import FakeClock

import stratamem as sm

MARKER = "PURGE-ME-zqxjk-7781"


def db_bytes(path):
    blob = b""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            with open(path + suffix, "rb") as f:
                blob += f.read()
    return blob


def test_purge_removes_every_byte(tmp_path):
    path = str(tmp_path / "m.db")
    clock = FakeClock()
    store = sm.open_store(path, clock=clock)
    s = store.session("main")
    s.save("doomed", f"{MARKER} first draft", tags=[f"{MARKER}-tag"])
    s.save("doomed", f"{MARKER} second draft")  # the update leaves old bytes behind without secure delete
    s.save("fleeting", f"{MARKER} expiring", ttl=30)
    s.save("kept", "an ordinary survivor")
    s.delete("doomed")
    clock.advance(60)
    assert MARKER.encode() in db_bytes(path)
    purged = store.purge(before=clock.now + timedelta(seconds=1))
    assert purged == 2
    assert MARKER.encode() not in db_bytes(path)
    assert b"zqxjk" not in db_bytes(path)  # nor its stemmed term
    assert s.get("kept").content == "an ordinary survivor"
    assert [h.memory.key for h in s.search("survivor")] == ["kept"]
    assert store.verify_audit() is None
    store.close()
    assert MARKER.encode() not in db_bytes(path)


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
