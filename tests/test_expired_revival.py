"""An expired record behaves exactly like an absent one (issue 9, item 1).

A save over an expired same-level version used to update that row in place,
reviving its ``created_at`` and ``lineage_id``; those leak through
``Memory.created_at``, zeroclaw ``memory_export`` and ``memory_recall``
since/until. Now the expired version is retired (as if deleted when it expired)
and the save creates a fresh record, on every backend and through import too.
"""

from __future__ import annotations

import json
from datetime import timedelta

from stratamem import Level, tools


def test_save_over_expired_version_is_a_fresh_record(make_store, clock):
    store = make_store(clock=clock)
    s = store.session("main")
    old = s.save("k", "first life", ttl=10)
    clock.advance(60)
    assert s.get("k") is None
    new = s.save("k", "second life")
    assert new.created_at > old.expires_at
    assert new.created_at == new.updated_at
    assert new.lineage_id != old.lineage_id
    assert new.expires_at is None
    assert s.get("k") == new
    assert [m.created_at for m in s.list()] == [new.created_at]
    # The expired version stays retired: a later save updates the new record in place.
    again = s.save("k", "second life, edited")
    assert (again.created_at, again.lineage_id) == (new.created_at, new.lineage_id)
    # Nothing of the old record is searchable and the retired row is still purgeable.
    assert [h.memory.content for h in s.search("life")] == ["second life, edited"]
    assert store.purge(before=clock.now + timedelta(seconds=1)) == 1
    assert s.get("k") == again
    assert store.verify_audit() is None


def test_zeroclaw_export_and_recall_do_not_see_the_expired_record(make_store, clock):
    store = make_store(clock=clock)
    s = store.session("main")
    s.save("k", "old content", ttl=5)
    clock.advance(3600)
    cutoff = clock.now
    s.save("k", "new content")
    since = cutoff.isoformat()
    recalled = tools.execute(s, "memory_recall", {"query": "", "since": since})
    assert "k: new content" in recalled
    exported = tools.execute(s, "memory_export", {"since": since})
    assert "new content" in exported
    before_cutoff = tools.execute(s, "memory_export", {"until": (cutoff - timedelta(seconds=1)).isoformat()})
    assert "content" not in before_cutoff


def test_expired_version_at_another_level_is_untouched_and_lower_one_reappears(make_store, clock):
    store = make_store(clock=clock)
    low = store.session("main")
    low.save("k", "low")
    high = store.session("main")
    high.escalate(Level.INTERNAL, "up")
    gone = high.save("k", "high expiring", ttl=10)
    clock.advance(60)
    assert high.get("k").content == "low"
    fresh = high.save("k", "high again")
    assert fresh.lineage_id != gone.lineage_id and fresh.created_at > gone.expires_at
    assert low.get("k").content == "low"
    assert high.get("k") == fresh


def test_save_after_delete_is_a_fresh_record(make_store, clock):
    store = make_store(clock=clock)
    s = store.session("main")
    old = s.save("k", "first")
    s.delete("k")
    clock.advance(5)
    new = s.save("k", "second")
    assert new.lineage_id != old.lineage_id and new.created_at > old.created_at


def test_import_over_expired_version_keeps_the_imported_fields(make_store, clock):
    store = make_store(clock=clock)
    s = store.session("main")
    s.save("k", "expiring", ttl=1)
    clock.advance(60)
    template = s.save("other", "template")
    imported = type(template)(
        key="k",
        content="imported",
        level=Level.PUBLIC,
        tags=(),
        category="core",
        agent_id="main",
        session_id=None,
        created_at=template.created_at - timedelta(days=3),
        updated_at=template.created_at - timedelta(days=2),
        lineage_id="imported-lineage",
    )
    assert store.import_memories([imported]) == 1
    got = s.get("k")
    assert (got.content, got.created_at, got.lineage_id) == (
        "imported",
        imported.created_at,
        "imported-lineage",
    )
    exported = [m for m in store.export() if m.key == "k"]
    assert len(exported) == 1
    assert json.dumps(exported[0].to_dict())
