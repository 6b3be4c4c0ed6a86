import json
import sqlite3

from stratamem import ClearanceError, Level, NotFound


def ops(store):
    return [e.operation for e in store.audit_events()]


def test_every_operation_is_audited_without_content(store):
    s = store.session("main", clearance=Level.CONFIDENTIAL)
    s.save("k", "SECRET-CONTENT-123")
    s.get("k")
    s.search("content")
    s.list()
    s.escalate(Level.CONFIDENTIAL, "x")
    try:
        s.escalate(Level.RESTRICTED, "too high")
    except ClearanceError:
        pass
    try:
        s.delete("k")
    except NotFound:
        pass
    s.reset()
    events = store.audit_events()
    assert [e.operation for e in events] == [
        "session.open",
        "save",
        "get",
        "search",
        "list",
        "escalate",
        "escalate",
        "delete",
        "session.open",
    ]
    assert [e.outcome for e in events][5:8] == ["ok", "refused", "not_found"]
    save = events[1]
    assert save.keys == ("k",) and save.levels == (Level.PUBLIC,) and len(save.lineage_ids) == 1
    assert events[2].lineage_ids == save.lineage_ids  # the get read that lineage
    for e in events:
        blob = json.dumps([e.keys, e.detail, e.lineage_ids])
        assert "SECRET-CONTENT" not in blob
        assert e.session_id is not None and e.time.tzinfo is not None


def test_reading_audit_needs_clearance(store):
    s = store.session("main")
    s.escalate(Level.CONFIDENTIAL, "x")
    s.save("k", "v")
    public_view = store.audit_events(clearance=Level.PUBLIC)
    assert all(e.taint <= Level.PUBLIC for e in public_view)
    assert len(public_view) < len(store.audit_events(clearance=Level.RESTRICTED))


def test_lineage_lookup(store):
    s = store.session("main")
    saved = s.save("k", "v")
    s.get("k")
    s.search("v")
    readers = store.audit_events(lineage_id=saved.lineage_id)
    assert [e.operation for e in readers] == ["save", "get", "search"]


def _tamper(path, sql):
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()


def _populated(tmp_path):
    import stratamem as sm

    path = str(tmp_path / "audit.db")
    store = sm.open_store(path)
    s = store.session("main")
    for i in range(5):
        s.save(f"k{i}", "v")
    store.close()
    return path


def _verify(path):
    import stratamem as sm

    with sm.open_store(path) as store:
        return store.verify_audit()


def test_verify_intact(tmp_path):
    assert _verify(_populated(tmp_path)) is None


def test_verify_detects_edit(tmp_path):
    path = _populated(tmp_path)
    _tamper(path, "UPDATE audit SET keys = '[\"forged\"]' WHERE seq = 3")
    assert _verify(path) == 3


def test_verify_detects_deletion(tmp_path):
    path = _populated(tmp_path)
    _tamper(path, "DELETE FROM audit WHERE seq = 4")
    assert _verify(path) == 4


def test_verify_detects_truncation(tmp_path):
    path = _populated(tmp_path)
    _tamper(path, "DELETE FROM audit WHERE seq = (SELECT max(seq) FROM audit)")
    assert _verify(path) == 6


def test_verify_detects_reorder(tmp_path):
    path = _populated(tmp_path)
    _tamper(path, "UPDATE audit SET seq = -2 WHERE seq = 2")
    _tamper(path, "UPDATE audit SET seq = 2 WHERE seq = 3")
    _tamper(path, "UPDATE audit SET seq = 3 WHERE seq = -2")
    assert _verify(path) == 2


def test_verify_detects_unparsable_edit(tmp_path):
    path = _populated(tmp_path)
    _tamper(path, "UPDATE audit SET levels = 'garbage' WHERE seq = 2")
    assert _verify(path) == 2
