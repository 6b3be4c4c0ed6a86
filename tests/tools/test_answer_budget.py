"""Every tool answer fits the store's character budget, says when it was cut, and can be continued.

Each listing, search and graph read is walked with its cursors to the end: every answer is within the
budget and valid in its shape, and the entries seen, in order, are exactly those of an unbounded answer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tools_support import new_store

from stratamem.budget import DEFAULT_MAX_ANSWER_CHARS, ENV_MAX_ANSWER_CHARS, MIN_ANSWER_CHARS
from stratamem.errors import ValidationError
from stratamem.tools import execute
from stratamem.tools.fit import MORE_PREFIX, bound, cut_json_string, cut_marker
from stratamem.turn.tool_results import DEFAULT_MAX_TOOL_RESULT_CHARS

BUDGET = MIN_ANSWER_CHARS
HARD = '"\\\x01\n é😀'  # escapes, a control character, non-ASCII, a character outside the BMP


def _store(**options: Any):
    return new_store(max_answer_chars=options.pop("budget", BUDGET), **options)


def walk(session, name: str, arguments: dict[str, Any], field: str, budget: int = BUDGET) -> list[Any]:
    """Every entry of ``field`` over all answers, following next_cursor; each answer checked on the way."""
    seen: list[Any] = []
    cursor = None
    for _ in range(500):
        text = execute(session, name, {**arguments, **({"cursor": cursor} if cursor else {})})
        assert text is not None and len(text) <= budget, (name, len(text or ""))
        answer = json.loads(text)
        assert "error" not in answer, answer
        seen += answer[field]
        cursor = answer.get("next_cursor")
        if cursor is not None:
            assert answer["truncated"] is True
        else:
            return seen
    raise AssertionError("the cursors never ended")


def walk_lines(session, name: str, arguments: dict[str, Any], budget: int = BUDGET) -> list[str]:
    """The listed lines of a plain-text answer over all its continuations (``more: use cursor=``)."""
    seen: list[str] = []
    cursor = None
    for _ in range(500):
        text = execute(session, name, {**arguments, **({"cursor": cursor} if cursor else {})})
        assert text is not None and len(text) <= budget
        lines = text.split("\n")[1:]
        cursor = None
        if lines and lines[-1].startswith(MORE_PREFIX):
            cursor = lines.pop()[len(MORE_PREFIX) :]
        seen += lines
        if cursor is None:
            return seen
    raise AssertionError("the cursors never ended")


# memory tools ---------------------------------------------------------------------------------


def test_memory_list_is_cut_to_the_budget_and_its_cursor_continues():
    store = _store()
    session = store.session("a")
    for i in range(12):
        session.save(f"k{i:02}", f"{i} " + "x" * 1500)
    whole = json.loads(execute(session, "memory_list", {}) or "")
    assert whole["truncated"] is True and whole["next_cursor"] is not None
    keys = [m["key"] for m in walk(session, "memory_list", {}, "memories")]
    assert keys == [f"k{i:02}" for i in range(12)]
    store.close()


def test_a_memory_over_the_budget_is_cut_with_a_marker_in_list_get_and_search():
    store = _store()
    session = store.session("a")
    content = "word " + HARD * 2000
    session.save("big", content)
    session.save("small", "word small")
    listed = walk(session, "memory_list", {}, "memories")
    assert [m["key"] for m in listed] == ["big", "small"]
    assert listed[0]["content"].startswith("word " + HARD) and "characters cut" in listed[0]["content"]
    got = execute(session, "memory_get", {"key": "big"}) or ""
    answer = json.loads(got)
    assert len(got) <= BUDGET and answer["truncated"] is True and answer["found"] is True
    assert content.startswith(answer["content"].split(" [... ")[0])
    found = walk(session, "memory_search", {"query": "word", "max_results": 10}, "results")
    assert sorted(h["key"] for h in found) == ["big", "small"]
    store.close()


def test_memory_search_continues_with_its_cursor_in_rank_order():
    store = _store()
    session = store.session("a")
    for i in range(30):
        session.save(f"k{i:02}", "apple " * (i + 1) + "y" * 400)
    unbounded = [h.key for h in (hit.memory for hit in session.search("apple", max_results=100))]
    seen = [
        h["key"] for h in walk(session, "memory_search", {"query": "apple", "max_results": 100}, "results")
    ]
    assert seen == unbounded and len(seen) == 30
    store.close()


def test_a_long_query_is_not_echoed_whole():
    store = _store()
    session = store.session("a")
    session.save("k", "apple")
    text = execute(session, "memory_search", {"query": "apple " * 5000}) or ""
    assert len(text) <= BUDGET and json.loads(text)["truncated"] is True
    store.close()


def test_a_batch_answer_lists_what_fits_and_says_it_was_cut():
    store = _store()
    session = store.session("a")
    items = [{"key": f"key-{i:03}-" + "k" * 100, "content": "c"} for i in range(100)]
    text = execute(session, "memory_save_many", {"items": items}) or ""
    answer = json.loads(text)
    assert len(text) <= BUDGET and answer["saved"] == 100 and answer["truncated"] is True
    assert [m["key"] for m in answer["memories"]] == [i["key"] for i in items[: len(answer["memories"])]]
    assert len(session.list(limit=200)) == 100
    store.close()


def test_zeroclaw_recall_and_export_end_with_a_cursor_that_continues():
    store = _store()
    session = store.session("a")
    for i in range(20):
        session.save(f"k{i:02}", "apple " + "z" * 600)
    recalled = walk_lines(session, "memory_recall", {"query": "apple", "limit": 100})
    assert sorted(line.split(":")[0] for line in recalled) == [f"- [core] k{i:02}" for i in range(20)]
    exported = walk_lines(session, "memory_export", {"limit": 200})
    assert [json.loads(line)["key"] for line in exported] == [f"k{i:02}" for i in range(20)]
    store.close()


def test_the_budget_is_a_store_option_then_the_environment_then_the_default(monkeypatch):
    monkeypatch.delenv(ENV_MAX_ANSWER_CHARS, raising=False)
    assert new_store().max_answer_chars == DEFAULT_MAX_ANSWER_CHARS == DEFAULT_MAX_TOOL_RESULT_CHARS
    monkeypatch.setenv(ENV_MAX_ANSWER_CHARS, "8000")
    assert new_store().max_answer_chars == 8000
    assert new_store(max_answer_chars=5000).max_answer_chars == 5000
    monkeypatch.setenv(ENV_MAX_ANSWER_CHARS, "many")
    with pytest.raises(ValidationError):
        new_store()
    with pytest.raises(ValidationError):
        new_store(max_answer_chars=10)


def test_the_default_budget_bounds_a_page_of_large_memories():
    """The report's case: a page of 64 KiB memories answered megabytes through tools.execute."""
    store = new_store()
    session = store.session("a")
    session.save_many([{"key": f"k{i}", "content": "v" * 60_000} for i in range(8)])
    for name, arguments in (
        ("memory_list", {"limit": 200}),
        ("memory_search", {"query": "", "max_results": 100}),
    ):
        text = execute(session, name, arguments) or ""
        assert len(text) <= DEFAULT_MAX_ANSWER_CHARS and json.loads(text)["truncated"] is True
    store.close()


# the graph ----------------------------------------------------------------------------------------


def _graph_session(store, entities: int = 4, observations: int = 40, chars: int = 300):
    session = store.session("a")
    names = [f"e{i}" for i in range(entities)]
    execute(
        session,
        "create_entities",
        {
            "entities": [
                {
                    "name": name,
                    "entityType": "thing",
                    "observations": [f"{name} note {j} " + HARD * (chars // 8) for j in range(observations)],
                }
                for name in names
            ]
        },
    )
    for a, b in zip(names, names[1:] + names[:1], strict=True):
        session.graph.relate(a, b, "next")
    return session, names


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_graph", {}),
        ("search_nodes", {"query": "note"}),
        ("open_nodes", {"names": ["e0", "e1", "e2", "e3"]}),
    ],
)
def test_graph_reads_are_cut_by_entity_and_continue_to_every_entity(tool, arguments):
    store = _store()
    session, names = _graph_session(store)
    seen = walk(session, tool, arguments, "entities")
    assert sorted(e["name"] for e in seen) == names
    assert all(e["omittedObservations"] > 0 for e in seen)  # 40 observations of ~300 characters each
    relations = walk(session, tool, arguments, "relations")
    assert {(r["from"], r["to"]) for r in relations} >= {("e0", "e1"), ("e1", "e2"), ("e2", "e3")}
    store.close()


def test_a_small_graph_answers_exactly_as_before():
    store = _store()
    session, _ = _graph_session(store, entities=2, observations=1, chars=8)
    answer = json.loads(execute(session, "read_graph", {}) or "")
    assert set(answer) == {"entities", "relations"}
    assert [len(e["observations"]) for e in answer["entities"]] == [1, 1]
    store.close()


def test_a_graph_write_over_the_budget_answers_its_structured_form_cut():
    store = _store()
    session = store.session("a")
    entities = [{"name": f"n{i}", "entityType": "t", "observations": ["o" * 900]} for i in range(10)]
    text = execute(session, "create_entities", {"entities": entities}) or ""
    answer = json.loads(text)
    assert len(text) <= BUDGET and answer["truncated"] is True
    assert len(answer["entities"]) + answer["omitted"] == 10
    store.close()


def test_knowledge_listings_continue_with_their_cursor():
    store = _store()
    session, names = _graph_session(store, entities=30, observations=1, chars=8)
    for i in range(30):
        session.graph.capture(f"e{i}", content="alpha " + "w" * 280)
    lines = walk_lines(session, "knowledge", {"action": "search", "query": "alpha", "limit": 100})
    assert sorted(line.split("] ")[1].split(":")[0] for line in lines) == sorted(names)
    store.close()


# properties ---------------------------------------------------------------------------------------

_texts = st.text(alphabet=st.sampled_from(list(HARD + "ab ")), min_size=1, max_size=3000)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contents=st.lists(_texts, min_size=1, max_size=12), budget=st.integers(MIN_ANSWER_CHARS, 9000))
def test_paging_under_any_budget_shows_every_memory_once_in_order(contents, budget):
    store = _store(budget=budget)
    session = store.session("a")
    for i, content in enumerate(contents):
        session.save(f"k{i:02}", content)
    listed = walk(session, "memory_list", {"limit": 200}, "memories", budget)
    assert [m["key"] for m in listed] == [f"k{i:02}" for i in range(len(contents))]
    for entry, content in zip(listed, contents, strict=True):
        shown = entry["content"]
        assert shown == content or content.startswith(shown.rsplit(" [... ", 1)[0])
    store.close()


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400), room=st.integers(0, 500))
def test_a_cut_string_fits_its_room_when_encoded(text, room):
    cut = cut_json_string(text, room)
    encoded = len(json.dumps(cut, ensure_ascii=False)) - 2
    if cut == text:
        assert encoded <= room
    else:  # a room smaller than the marker holds just the marker
        assert encoded <= max(room, len(cut_marker(len(text))))
        assert text.startswith(cut.rsplit(" [... ", 1)[0])


@settings(max_examples=100, deadline=None)
@given(
    value=st.recursive(
        st.text(alphabet=st.sampled_from(list(HARD + "ab")), max_size=3000) | st.integers() | st.booleans(),
        lambda children: (
            st.lists(children, max_size=30) | st.dictionaries(st.text(max_size=5), children, max_size=8)
        ),
        max_leaves=60,
    )
)
def test_the_last_guard_keeps_any_json_object_within_the_budget_and_valid(value):
    text = json.dumps({"answer": value}, ensure_ascii=False)
    out = bound(text, BUDGET)
    assert len(out) <= BUDGET
    parsed = json.loads(out)
    assert out == text or parsed["truncated"] is True


def test_every_backend_pages_a_cut_listing_and_graph_to_the_end(make_store):
    store = make_store(max_answer_chars=BUDGET)
    session = store.session("a")
    session.save_many([{"key": f"k{i:02}", "content": "pear " + HARD * 150} for i in range(10)])
    assert [m["key"] for m in walk(session, "memory_list", {}, "memories")] == [f"k{i:02}" for i in range(10)]
    found = walk(session, "memory_search", {"query": "pear", "max_results": 100}, "results")
    assert sorted(h["key"] for h in found) == [f"k{i:02}" for i in range(10)]
    graph_session, names = _graph_session(store, entities=3, observations=20)
    assert graph_session is not None
    assert sorted(e["name"] for e in walk(graph_session, "read_graph", {}, "entities")) == names


HOSTILE_CURSORS = ["o1.-1", "o1.99999999999999999999999", "o1.abc", "o1.\ud800", "o1.1e3", "o1. 3", "o1.３",
                   "o1.5" * 1000, "zz", "", 5, ["o1.1"], {"o1": 1}]  # fmt: skip


@pytest.mark.parametrize("cursor", HOSTILE_CURSORS, ids=range(len(HOSTILE_CURSORS)))
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("memory_search", {"query": "note"}),
        ("search_nodes", {"query": "note"}),
        ("open_nodes", {"names": ["e0"]}),
    ],
)
def test_a_hostile_continuation_cursor_is_a_validation_error(tool, arguments, cursor):
    store = _store()
    session, _ = _graph_session(store, entities=2, observations=2, chars=16)
    session.save("k", "a note")
    answer = json.loads(execute(session, tool, {**arguments, "cursor": cursor}))
    assert answer["error"]["code"] == "VALIDATION_ERROR", answer
    assert len(json.dumps(answer)) < 1000  # the refusal never echoes a huge cursor back
    store.close()
