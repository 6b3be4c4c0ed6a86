"""When a memory happened (``occurred_at``) and what situates it (``context``), on every backend.

``occurred_at`` is on every record returned (default: the save's time), filtered by ``list``; ``context``
is stored with the record, never returned by get/list/search, carried by export/import and dump/restore,
and cleared by an update that does not give one.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone

import pytest
from backend_registry import REGISTRY

import stratamem as sm
from stratamem import Level, ValidationError
from stratamem.models import SituatedMemory
from stratamem.transfer import dump_lines, read_lines

PAST = datetime(1969, 7, 20, 20, 17, 40, 123456, tzinfo=UTC)


def _contexts(store: sm.Store) -> dict[str, str | None]:
    return {m.key: (m.context if isinstance(m, SituatedMemory) else None) for m in store.export()}


def test_occurred_at_round_trips_on_every_read(store):
    s = store.session("main")
    saved = s.save("landing", "Apollo 11 landed", occurred_at=PAST, context="a history lesson")
    assert saved.occurred_at == PAST
    assert type(saved) is sm.Memory  # context is never handed back
    got = s.get("landing")
    assert got.occurred_at == PAST and type(got) is sm.Memory
    assert [m.occurred_at for m in s.list()] == [PAST]
    hits = s.search("apollo", mode="lexical")
    assert [h.memory.occurred_at for h in hits] == [PAST] and type(hits[0].memory) is sm.Memory
    assert "history lesson" not in repr(got) and "history lesson" not in str(got.to_dict())
    assert _contexts(store) == {"landing": "a history lesson"}


def test_occurred_at_defaults_to_created_and_an_iso_string_with_offset_is_read_as_utc(store):
    s = store.session("main")
    plain = s.save("plain", "no time given")
    assert plain.occurred_at == plain.created_at
    assert s.get("plain").occurred_at == plain.created_at
    given = s.save("offset", "a meeting", occurred_at="2024-03-01T09:30:00+02:00")
    assert given.occurred_at == datetime(2024, 3, 1, 7, 30, tzinfo=UTC)
    assert given.occurred_at.tzinfo is UTC
    far = s.save("far", "a plan", occurred_at=datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC))
    old = s.save("old", "a founding", occurred_at=datetime(1, 1, 1, tzinfo=UTC))
    assert (
        s.get("far").occurred_at == far.occurred_at == datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    )
    assert s.get("old").occurred_at == old.occurred_at == datetime(1, 1, 1, tzinfo=UTC)


def test_an_update_happens_now_and_clears_an_old_context(store):
    s = store.session("main")
    s.save("k", "one", occurred_at=PAST, context="before")
    second = s.save("k", "two")
    assert second.occurred_at == second.updated_at != PAST
    assert s.get("k").occurred_at == second.updated_at
    assert _contexts(store) == {"k": None}
    s.save("k", "three", occurred_at=PAST, context="again")
    assert s.get("k").occurred_at == PAST and _contexts(store) == {"k": "again"}


def test_save_many_carries_both_and_a_bad_item_writes_nothing(store):
    s = store.session("main")
    stored = s.save_many(
        [
            {"key": "a", "content": "first", "occurred_at": PAST, "context": "  the title  "},
            {"key": "b", "content": "second", "occurred_at": "2001-09-09T01:46:40Z"},
            {"key": "c", "content": "third", "context": ""},
        ]
    )
    assert [m.occurred_at for m in stored][:2] == [PAST, datetime(2001, 9, 9, 1, 46, 40, tzinfo=UTC)]
    assert stored[2].occurred_at == stored[2].created_at
    assert _contexts(store) == {"a": "the title", "b": None, "c": None}
    for bad, code in (
        ({"occurred_at": "yesterday"}, "ISO 8601"),
        ({"occurred_at": datetime(2020, 1, 1)}, "timezone-aware"),
        ({"occurred_at": 12}, "occurred_at"),
        ({"context": "x" * 2001}, "limit is 2000"),
        ({"context": "bad\x00byte"}, "control"),
        ({"context": "\ud800"}, "UTF-8"),
        ({"context": 5}, "context must be a string"),
    ):
        with pytest.raises(ValidationError) as err:
            s.save_many([{"key": "ok", "content": "fine"}, {"key": "new", "content": "x", **bad}])
        assert err.value.code == "VALIDATION_ERROR"
        assert "item 1" in err.value.message and code in err.value.message, err.value.message
    assert sorted(m.key for m in s.list()) == ["a", "b", "c"]


def test_save_refuses_bad_times_and_contexts_and_writes_nothing(store):
    s = store.session("main")
    for kwargs in (
        {"occurred_at": datetime(2020, 1, 1)},  # naive datetime
        {"occurred_at": "0001-01-01T00:00:00+14:00"},  # before year 1 in UTC
        {"occurred_at": "9999-12-31T23:00:00-05:00"},  # after year 9999 in UTC
        {"occurred_at": "not a time"},
        {"context": "y" * 2001},
        {"context": "a\x07bell"},
    ):
        with pytest.raises(ValidationError):
            s.save("k", "v", **kwargs)
    assert list(s.list()) == []
    # a string without an offset is UTC (the module's convention for ISO strings); whitespace-only context: none
    m = s.save("k", "v", occurred_at="2020-01-01T00:00:00", context=" \n ")
    assert m.occurred_at == datetime(2020, 1, 1, tzinfo=UTC) and _contexts(store) == {"k": None}


def test_list_filters_on_occurred_time_inclusive(store):
    s = store.session("main")
    base = datetime(2020, 1, 1, tzinfo=UTC)
    for day in range(5):
        s.save(f"d{day}", f"day {day}", occurred_at=base + timedelta(days=day))
    s.save("now", "today")
    keys = lambda **kw: [m.key for m in s.list(**kw)]  # noqa: E731
    assert keys(occurred_since=base + timedelta(days=1), occurred_until=base + timedelta(days=3)) == [
        "d1",
        "d2",
        "d3",
    ]
    assert keys(occurred_until=base) == ["d0"]
    assert keys(occurred_since=base + timedelta(days=4)) == ["d4", "now"]
    east = timezone(timedelta(hours=5))
    assert keys(
        occurred_since=datetime(2020, 1, 3, 5, tzinfo=east), occurred_until=base + timedelta(days=2)
    ) == ["d2"]
    with pytest.raises(ValidationError):
        s.list(occurred_since=datetime(2020, 1, 1))  # naive


def test_higher_version_keeps_its_own_occurred_time(store):
    low = store.session("main")
    low.save("k", "low", occurred_at=PAST)
    high = store.session("main")
    high.escalate(Level.CONFIDENTIAL, "x")
    high.save("k", "high", occurred_at=PAST + timedelta(days=1), context="secret situation")
    assert low.get("k").occurred_at == PAST
    assert high.get("k").occurred_at == PAST + timedelta(days=1)
    assert [m.key for m in low.list(occurred_since=PAST + timedelta(hours=1))] == []


def test_export_and_import_carry_both(make_store):
    source = make_store()
    s = source.session("main")
    s.save("a", "with context", occurred_at=PAST, context="the previous turn")
    s.save("b", "without")
    text = "".join(dump_lines(source.export()))
    assert (
        '"context": "the previous turn"' in text
        and '"occurred_at": "1969-07-20T20:17:40.123456+00:00"' in text
    )
    target = make_store()
    target.import_memories(read_lines(io.StringIO(text), target.max_content_bytes))
    got = target.session("main").get("a")
    assert got.occurred_at == PAST and type(got) is sm.Memory
    assert _contexts(target) == {"a": "the previous turn", "b": None}
    b = target.session("main").get("b")
    assert b.occurred_at == s.get("b").occurred_at


def test_an_import_line_is_checked_like_a_save():
    for line, message in (
        ('{"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "a", "context": 3}', "context"),
        (
            '{"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "a", "occurred_at": "2020-01-01"}',
            "timezone",
        ),
    ):
        with pytest.raises(ValidationError) as err:
            read_lines(io.StringIO(line + "\n"), 1000)
        assert message in err.value.message
    old = '{"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "a", "created_at": "2020-01-01T00:00:00Z"}'
    (memory,) = read_lines(io.StringIO(old + "\n"), 1000)
    assert memory.occurred_at == datetime(2020, 1, 1, tzinfo=UTC)  # a line from before the field


@pytest.mark.parametrize("target_backend", ["sqlite-memory", "markdown"])
def test_dump_and_restore_carry_both(make_store, tmp_path, target_backend):
    source = make_store()
    s = source.session("main")
    s.save("a", "with context", occurred_at=PAST, context="a title")
    s.save("b", "plain")
    target = sm.open_store(REGISTRY[target_backend].url(tmp_path / "copy"))
    try:
        target.backend.restore(source.backend.dump())
        t = target.session("main")
        assert t.get("a").occurred_at == PAST
        assert t.get("b").occurred_at == s.get("b").occurred_at
        assert _contexts(target) == {"a": "a title", "b": None}
    finally:
        target.close()


def test_the_context_shapes_the_embedding_and_never_the_lexical_index(make_store):
    store = make_store(search_mode="semantic", embedder="hash")
    s = store.session("main")
    s.save("plain", "we loved the food there", occurred_at=PAST)
    s.save("situated", "we loved the food there", context="Lisbon trip with Ana")
    store.reindex()
    assert [h.memory.key for h in s.search("lisbon trip ana", max_results=1)] == ["situated"]
    assert [h.memory.key for h in s.search("lisbon trip ana", mode="lexical")] == []  # BM25: content only
    hit = s.search("lisbon trip ana", max_results=1)[0]
    assert type(hit.memory) is sm.Memory and "Lisbon" not in hit.memory.content
