"""Migration 12: occurred times and contexts. A store written under version 11 upgrades in place (its rows
happened when they were created), the earlier save functions are gone, and the new ones write both."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pg_support import superuser, url_at_version

pytest.importorskip("psycopg")

import stratamem as sm
from stratamem.models import SituatedMemory
from stratamem.storage.postgres import frozen_saves


def test_a_store_written_under_version_11_upgrades_and_its_rows_happened_when_created(monkeypatch):
    url, schema = url_at_version(monkeypatch, 11)
    with sm.open_store(url) as old:
        s = old.session("a")
        s.save_many([{"key": f"k{i}", "content": f"old words {i}"} for i in range(5)])
        s.save("one", "a single save under version 11")
    monkeypatch.undo()
    with sm.open_store(url) as store:
        with superuser() as su:
            for name, types in (
                ("sm_save", frozen_saves.V9_SM_SAVE_TYPES),
                ("sm_save_one", frozen_saves.V10_SM_SAVE_ONE_TYPES),
            ):
                assert su.execute(f"SELECT to_regprocedure('{schema}.{name}({types})')").fetchone() == (None,)
            assert su.execute(
                f"SELECT count(*) FROM {schema}.memories WHERE occurred_us IS NOT NULL"
            ).fetchone() == (0,)
        s = store.session("a")
        for m in s.list():
            assert m.occurred_at == m.created_at
        when = datetime(1990, 1, 2, tzinfo=UTC)
        s.save("one", "updated after the upgrade", occurred_at=when, context="a title")
        s.save_many([{"key": "k0", "content": "batch after", "occurred_at": when, "context": "batch title"}])
        assert s.get("one").occurred_at == when and s.get("k0").occurred_at == when
        contexts = {m.key: m.context for m in store.export() if isinstance(m, SituatedMemory)}
        assert contexts == {"one": "a title", "k0": "batch title"}
        assert [m.key for m in s.list(occurred_until=when)] == ["k0", "one"]
        assert store.verify_audit() is None
