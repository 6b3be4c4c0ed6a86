"""Memories and the turn's records of one export are imported in one transaction: all or nothing."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

import stratamem as sm
from stratamem.errors import StorageError
from stratamem.storage.sql.transcripts import TranscriptMessage

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def memory(key: str) -> sm.Memory:
    return sm.Memory(
        key=key,
        content=f"content of {key}",
        level=sm.Level.PUBLIC,
        tags=(),
        category="core",
        agent_id="main",
        session_id=None,
        created_at=WHEN,
        updated_at=WHEN,
        lineage_id=f"lineage-{key}",
    )


GOOD = TranscriptMessage(0, "s1", "main", sm.Level.PUBLIC, "user", "hello", "[]", None, None, WHEN)


def test_a_turn_record_the_database_refuses_leaves_no_memory_imported(store) -> None:
    before = len(store.audit_events())
    bad = replace(GOOD, content=None)  # NOT NULL: refused by the database itself, after the memories
    with pytest.raises(StorageError):  # the database refused it, after the memories were written
        store.import_memories([memory("a"), memory("b")], turns=[GOOD, bad], scan=False)
    assert list(store.export()) == []
    assert list(store.export_turns()) == []
    assert len(store.audit_events()) == before + 2  # the two export reads above, nothing imported


def test_memories_and_turn_records_land_together(store) -> None:
    count = store.import_memories([memory("a")], turns=[GOOD], scan=False)
    assert count == 1
    assert [m.key for m in store.export()] == ["a"]
    (message,) = store.export_turns()
    assert message.content == "hello"
    operations = [e.operation for e in store.audit_events()]
    assert "import" in operations and "import.turns" in operations
