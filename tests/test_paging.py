"""Bounded listings: pages, cursors, and paging that invisible records cannot influence (issue 9, item 10)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from conftest import BACKENDS
from hypothesis import HealthCheck, given, settings
from test_noninterference import HIDDEN_KEYS, KEYS, OWN, PEER, TAGS, replay, scenario

from stratamem import Level, ValidationError
from stratamem.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, decode_cursor, encode_cursor
from stratamem.tools import execute


def fill(session, n: int, prefix: str = "k", **options) -> None:
    for i in range(n):
        session.save(f"{prefix}{i:04d}", f"content {i}", **options)


def walk(session, limit: int, **filters) -> tuple[list, list]:
    """Every page of a listing: (memories in order, cursors handed out)."""
    memories, cursors, cursor = [], [], None
    while True:
        page = session.list(limit=limit, cursor=cursor, **filters)
        assert len(page) <= limit
        memories += page
        cursors.append(page.next_cursor)
        if (cursor := page.next_cursor) is None:
            return memories, cursors


def test_pages_cover_the_whole_view_once_in_order(store):
    own = store.session("a", peers=("b",))
    fill(store.session("b"), 7, prefix="p")
    fill(own, 12)
    everything = own.list()
    assert everything.next_cursor is None
    for limit in (1, 5, 12, 19, 100):
        pages, cursors = walk(own, limit)
        assert pages == list(everything)
        assert cursors[-1] is None and all(cursors[:-1])
    # own agent first, then the peer; keys in code point order within each
    assert [m.agent_id for m in everything] == ["a"] * 12 + ["b"] * 7


def test_paging_survives_writes_between_pages(store):
    s = store.session()
    fill(s, 6)
    first = s.list(limit=3)
    s.save("k0000", "updated, before the cursor")
    s.save("k0004b", "inserted after the cursor")
    s.delete("k0005")
    rest = s.list(limit=10, cursor=first.next_cursor)
    assert [m.key for m in rest] == ["k0003", "k0004", "k0004b"]


def test_cursor_orders_keys_by_code_point_on_every_backend(store):
    s = store.session()
    keys = ["B", "a", "Z", "é", "e", "😀", "ß", "10", "9", "a b"]
    for key in keys:
        s.save(key, "x")
    pages, _ = walk(s, 3)
    assert [m.key for m in pages] == sorted(keys)


def test_bad_cursors_are_validation_errors(store):
    s = store.session("a")
    s.save("k", "x")
    for bad in ("", "x", "c1.", "c1.!!!!", "c1." + "A" * 5000, 5, ["c1.x"], "c1.bnVsbA", "c1.WzEsMl0"):
        with pytest.raises(ValidationError):
            s.list(limit=1, cursor=bad)
    # a well-formed cursor for an agent this session does not read names nothing it may use
    other = store.session("z")
    other.save("k", "x")
    with pytest.raises(ValidationError):
        s.list(limit=1, cursor=encode_cursor(other.list()[0]))
    for bad_limit in (0, -1, True, 1.5, "3"):
        with pytest.raises(ValidationError):
            s.list(limit=bad_limit)


def test_filters_run_in_the_store(store):
    s = store.session("a")
    s.save("old", "x", category="daily")
    store.clock.advance(3600)
    middle = store.now()
    s.save("new", "y", category="daily", tags=["t"])
    s.save("core", "z")
    later = store.session("a")
    later.save("theirs", "w")
    assert [m.key for m in s.list(category="daily")] == ["new", "old"]
    assert [m.key for m in s.list(since=middle)] == ["core", "new", "theirs"]
    assert [m.key for m in s.list(until=middle)] == ["old"]
    assert [m.key for m in s.list(saved_by=later.id)] == ["theirs"]
    assert [m.key for m in s.list(without_tag="t")] == ["core", "old", "theirs"]
    assert [m.key for m in s.recent(2)] == ["theirs", "core"]
    assert [m.key for m in s.recent(5, until=middle)] == ["old"]


# -- tools, REST and CLI: a default page and a maximum ----------------------------------------------


def test_memory_list_tool_answers_one_bounded_page_and_says_when_more_exist(store):
    s = store.session()
    fill(s, MAX_PAGE_SIZE + 30)
    first = json.loads(execute(s, "memory_list", {}))
    assert len(first["memories"]) == DEFAULT_PAGE_SIZE and first["next_cursor"]
    assert len(json.loads(execute(s, "memory_list", {"limit": 100_000}))["memories"]) == MAX_PAGE_SIZE
    seen, cursor = [], None
    while True:
        page = json.loads(
            execute(s, "memory_list", {"limit": 70, "cursor": cursor} if cursor else {"limit": 70})
        )
        seen += [m["key"] for m in page["memories"]]
        if (cursor := page["next_cursor"]) is None:
            break
    assert seen == [f"k{i:04d}" for i in range(MAX_PAGE_SIZE + 30)]
    bad = json.loads(execute(s, "memory_list", {"cursor": "nope"}))
    assert bad["error"]["code"] == "VALIDATION_ERROR"


def test_zeroclaw_export_pages_with_a_more_line(store):
    s = store.session()
    fill(s, 5, category="daily")
    s.save("other", "x")
    text = execute(s, "memory_export", {"category": "daily", "limit": 2})
    lines = text.split("\n")
    assert lines[0] == "Exported 2 memories:" and lines[-1].startswith("more: use cursor=c1.")
    cursor = lines[-1].removeprefix("more: use cursor=")
    keys = [json.loads(line)["key"] for line in lines[1:-1]]
    while cursor:
        lines = execute(s, "memory_export", {"category": "daily", "limit": 2, "cursor": cursor}).split("\n")
        cursor = lines[-1].removeprefix("more: use cursor=") if lines[-1].startswith("more:") else None
        keys += [json.loads(line)["key"] for line in lines[1:] if not line.startswith("more:")]
    assert keys == [f"k{i:04d}" for i in range(5)]
    default = execute(s, "memory_export", {})
    assert default.startswith("Exported 6 memories:") and "more:" not in default


def test_zeroclaw_recall_by_time_is_newest_first_and_bounded(store):
    s = store.session()
    start = store.now()
    fill(s, 30)
    text = execute(s, "memory_recall", {"since": start.isoformat(), "limit": 3})
    assert text.split("\n")[1:] == [f"- [core] k{i:04d}: content {i}" for i in (29, 28, 27)]


def test_cli_list_pages(tmp_path):
    from click.testing import CliRunner

    from stratamem.cli import cli

    db = str(tmp_path / "m.db")
    runner = CliRunner()
    for i in range(3):
        assert runner.invoke(cli, ["--db", db, "save", f"k{i}", "c"]).exit_code == 0
    first = json.loads(runner.invoke(cli, ["--db", db, "--json", "list", "--limit", "2"]).output)
    assert [m["key"] for m in first["memories"]] == ["k0", "k1"] and first["next_cursor"]
    rest = runner.invoke(cli, ["--db", db, "list", "--limit", "2", "--cursor", first["next_cursor"]])
    assert rest.exit_code == 0 and rest.output.startswith("k2 [PUBLIC]") and "more:" not in rest.output
    human = runner.invoke(cli, ["--db", db, "list", "--limit", "1"])
    assert human.output.splitlines()[-1].startswith("more: use --cursor c1.")
    assert runner.invoke(cli, ["--db", db, "list", "--cursor", "bogus"]).exit_code == 2


# -- noninterference, extended to paged listings ------------------------------------------------------


def observe_pages(observer) -> list:
    """Every page at several sizes (and with forged cursors naming visible and invisible keys)."""

    def mem(m):
        return (m.agent_id, m.key, m.level, m.content, m.tags, m.created_at, m.updated_at, m.expires_at)

    out = []
    for limit in (1, 2, 3):
        for tag in (None, *TAGS):
            cursor = None
            while True:
                page = observer.list(tag=tag, limit=limit, cursor=cursor)
                out.append((limit, tag, [mem(m) for m in page], page.next_cursor))
                if (cursor := page.next_cursor) is None:
                    break
    for agent in (OWN, PEER):
        for key in KEYS + HIDDEN_KEYS:
            forged = encode_cursor(_Position(agent, key))
            out.append(("forged", agent, key, [mem(m) for m in observer.list(limit=2, cursor=forged)]))
    out.append(("recent", [mem(m) for m in observer.recent(3)]))
    return out


class _Position:
    """What ``encode_cursor`` reads from a memory."""

    def __init__(self, agent_id: str, key: str) -> None:
        self.agent_id, self.key = agent_id, key


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario())
def test_invisible_records_change_no_page_and_no_cursor(backend, tmp_path, data):
    plain, noisy = replay(backend, tmp_path, data)
    try:
        assert observe_pages(plain.observer) == observe_pages(noisy.observer)
    finally:
        plain.store.close()
        noisy.store.close()


def test_a_cursor_encodes_only_the_last_memory_shown(store):
    s = store.session("a")
    s.escalate(Level.INTERNAL, "t")
    s.save("b-visible", "x")
    writer = store.session("a")
    writer.escalate(Level.RESTRICTED, "t")
    writer.save("c-secret", "never named")
    s.save("d-visible", "y")
    page = s.list(limit=1)
    assert decode_cursor(page.next_cursor) == ("a", "b-visible")
    assert [m.key for m in s.list(limit=5, cursor=page.next_cursor)] == ["d-visible"]


def test_expired_memories_are_not_counted_as_more(store):
    s = store.session()
    s.save("a", "x")
    s.save("b", "y", ttl=timedelta(seconds=1))
    store.clock.advance(5)
    page = s.list(limit=1)
    assert [m.key for m in page] == ["a"] and page.next_cursor is None


def test_autonomous_origins_page_without_conversation_memories(store):
    """A cron read pages in the store without conversation memories (the scoped session once lacked paging)."""
    s = store.session()
    start = store.now()
    s.save("a-conv", "chat", category="conversation")
    fill(s, 3)
    page = json.loads(execute(s, "memory_list", {"limit": 2}, origin="cron"))
    assert [m["key"] for m in page["memories"]] == ["k0000", "k0001"] and page["next_cursor"]
    rest = json.loads(execute(s, "memory_list", {"cursor": page["next_cursor"]}, origin="cron"))
    assert [m["key"] for m in rest["memories"]] == ["k0002"] and rest["next_cursor"] is None
    recalled = execute(s, "memory_recall", {"since": start.isoformat(), "limit": 10}, origin="cron")
    assert "a-conv" not in recalled and recalled.startswith("Found 3 memories:")
    exported = execute(s, "memory_export", {}, origin="cron")
    assert "a-conv" not in exported and exported.startswith("Exported 3 memories:")
    assert "a-conv" in execute(s, "memory_export", {})
