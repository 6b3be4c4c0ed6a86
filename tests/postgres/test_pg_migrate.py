"""``migrate(from_url, to_url)``: SQLite -> PostgreSQL -> SQLite loses nothing.

Every level and version, soft-deleted and expired records, sessions with their taint and history,
peers, NUL bytes in content, and an audit chain that still verifies (plus one ``migrate`` event on
each target).
"""

from __future__ import annotations

from datetime import timedelta

import pg_server
import pytest
from pg_support import Clock

import stratamem as sm
from stratamem.migrate import migrate, stored_languages


def build(path: str) -> tuple[sm.Store, dict[str, str]]:
    clock = Clock()
    store = sm.open_store(path, clock=clock, languages=("english", "spanish"))
    a = store.session("a", peers=("b",))
    a.save("plans", "public plans for the picnic", tags=["team", "outdoors"])
    a.save("nul", "binary-ish \x00 content \ue000 with the escape char", category="daily")
    a.save("gone", "soon soft-deleted")
    a.delete("gone")
    a.save("brief", "expires quickly", ttl=1)
    b = store.session("b")
    b.save("peer", "a note from b, las canciones")
    conf = store.session("a", clearance=sm.Level.CONFIDENTIAL, peers=("b",))
    conf.escalate(sm.Level.INTERNAL, "step one", source="tool:x")
    conf.escalate(sm.Level.CONFIDENTIAL, "payroll\x00 reason")
    conf.save("plans", "confidential plans: the merger")
    conf.save("salary", "confidential salary figures")
    conf.save("salary", "confidential salary figures, revised")
    conf.delete("salary")
    conf.save("salary", "re-created after delete")
    clock.advance(5)
    store.purge(before=clock.now - timedelta(days=365))  # audited, removes nothing
    return store, {"a": a.id, "conf": conf.id}


def rows(store: sm.Store) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for table, row in store.backend.dump():
        out.setdefault(table, []).append(row)
    return out


def observe(store: sm.Store, ids: dict[str, str]) -> list:
    conf = store.session("a", session_id=ids["conf"])  # a resume keeps the limits the session was made with
    pub = store.session("a", session_id=ids["a"])
    out = [conf.taint, [(e.previous, e.new, e.reason, e.source) for e in conf.taint_history]]
    for s in (conf, pub):
        out.append(
            [(m.key, m.level, m.content, m.tags, m.category, m.agent_id, m.lineage_id) for m in s.list()]
        )
        out.append([(h.memory.key, h.memory.level, h.score) for h in s.search("plans picnic merger canción")])
    return out


def test_sqlite_to_postgres_to_sqlite_loses_nothing(tmp_path):
    first = str(tmp_path / "first.db")
    source, ids = build(first)
    before_view = observe(source, ids)  # (resuming sessions and reading append audit events)
    before_rows = rows(source)
    source.close()
    pg_url = pg_server.fresh_url(prefix="copy")
    last = str(tmp_path / "last.db")

    copied = migrate(first, pg_url)
    assert copied == sum(len(v) for k, v in before_rows.items() if k != "meta")
    assert stored_languages(pg_url) == ("english", "spanish")
    with sm.open_store(pg_url, languages=("english", "spanish")) as pg:
        middle_rows = rows(pg)
        assert pg.verify_audit() is None
        assert pg.audit_events()[-1].operation == "migrate"
        assert observe(pg, ids)[:2] == before_view[:2]  # taint and history survive a resume
    migrate(pg_url, last)

    with sm.open_store(last, languages=("english", "spanish")) as final:
        after_rows = rows(final)
        assert final.verify_audit() is None
        assert observe(final, ids) == before_view
    for table in ("sessions", "taint_events", "memories"):
        assert middle_rows[table] == before_rows[table], table
        assert after_rows[table] == before_rows[table], table
    assert len([m for m in after_rows["memories"] if m["deleted_us"] is not None]) == 2
    # The audit log is the original chain, plus one "migrate" event per copy (and the observe() reads).
    n = len(before_rows["audit"])
    assert middle_rows["audit"][:n] == before_rows["audit"]
    assert after_rows["audit"][:n] == before_rows["audit"]
    assert [e["operation"] for e in after_rows["audit"][n:]][:1] == ["migrate"]


def test_the_copy_ranks_like_the_original(tmp_path):
    path = str(tmp_path / "rank.db")
    store = sm.open_store(path, clock=Clock())
    s = store.session("a")
    for i in range(60):
        s.save(f"k{i}", f"note {i} about {'budget' if i % 3 else 'payroll'} and {'team ' * (i % 4)}meeting")
    expected = [(h.memory.key, h.score) for h in s.search("budget team meeting", 20)]
    store.close()
    url = pg_server.fresh_url(prefix="rank")
    migrate(path, url)
    with sm.open_store(url) as pg:
        assert [
            (h.memory.key, h.score) for h in pg.session("a").search("budget team meeting", 20)
        ] == expected


def test_refuses_a_non_empty_target_and_a_missing_source(tmp_path):
    path = str(tmp_path / "src.db")
    with sm.open_store(path) as store:
        store.session("a").save("k", "v")
    url = pg_server.fresh_url(prefix="full")
    with sm.open_store(url) as target:
        target.session("x").save("there", "already")
    with pytest.raises(sm.ValidationError, match="not empty"):
        migrate(path, url)
    with pytest.raises(sm.ValidationError, match="no store"):
        migrate(str(tmp_path / "missing.db"), pg_server.fresh_url(prefix="empty"))
    with sm.open_store(url) as target:  # the failed copy left nothing behind
        assert [m.key for m in target.session("x").list()] == ["there"]
