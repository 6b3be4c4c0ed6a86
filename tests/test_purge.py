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


def test_purge_removes_a_context_with_its_row(tmp_path):
    path = str(tmp_path / "c.db")
    clock = FakeClock()
    store = sm.open_store(path, clock=clock)
    s = store.session("main")
    s.save("doomed", "plain words", context=f"{MARKER} the situation")
    s.save("doomed", "plain words again", context=f"{MARKER} updated situation")
    s.save("kept", "an ordinary survivor", context="harmless title")
    s.delete("doomed")
    clock.advance(60)
    assert MARKER.encode() in db_bytes(path)
    assert store.purge(before=clock.now) == 1
    assert MARKER.encode() not in db_bytes(path)
    assert [m.key for m in s.list()] == ["kept"]
    store.close()
    assert MARKER.encode() not in db_bytes(path)
