"""The triggerfish tools through ``execute``: shapes, forced levels, noninterference, errors."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from tools_support import call, error_code, fixed_clock_store, new_store

import stratamem as sm
from stratamem import Level
from stratamem.tools import execute


@pytest.fixture
def store():
    with new_store() as opened:
        yield opened


def test_five_tools_round_trip(store):
    s = store.session()
    assert call(s, "memory_save", key="user-name", content="Ada Lovelace", tags=["personal"]) == {
        "saved": True,
        "key": "user-name",
        "classification": "PUBLIC",
    }

    got = call(s, "memory_get", key="user-name")
    assert set(got) == {"found", "key", "content", "classification", "tags", "updated_at", "occurred_at"}
    assert got["found"] is True and got["content"] == "Ada Lovelace" and got["tags"] == ["personal"]
    assert datetime.fromisoformat(got["updated_at"]).utcoffset() is not None

    found = call(s, "memory_search", query="lovelace", max_results=5)
    assert found["query"] == "lovelace"
    assert [r["key"] for r in found["results"]] == ["user-name"]
    assert set(found["results"][0]) == {"key", "content", "classification", "tags", "occurred_at", "score"}
    assert isinstance(found["results"][0]["score"], float) and found["results"][0]["score"] > 0

    listed = call(s, "memory_list")
    assert [m["key"] for m in listed["memories"]] == ["user-name"]
    assert set(listed["memories"][0]) == {
        "key",
        "content",
        "classification",
        "tags",
        "updated_at",
        "occurred_at",
    }
    assert call(s, "memory_list", tag="personal") == listed
    assert call(s, "memory_list", tag="work") == {"memories": [], "next_cursor": None}

    assert call(s, "memory_delete", key="user-name") == {"deleted": True, "key": "user-name"}
    assert call(s, "memory_get", key="user-name") == {"found": False, "key": "user-name"}
    assert call(s, "memory_delete", key="user-name")["error"]["code"] == "NOT_FOUND"


def test_classification_argument_cannot_lower_the_level(store):
    s = store.session(agent_id="main")
    s.escalate(Level.CONFIDENTIAL, "read a confidential file")
    answer = call(
        s, "memory_save", key="plan", content="merger in May", classification="PUBLIC", level="PUBLIC"
    )
    assert answer["classification"] == "CONFIDENTIAL"
    assert s.get("plan").level is Level.CONFIDENTIAL

    public = store.session(agent_id="main")
    assert public.taint is Level.PUBLIC
    assert public.get("plan") is None
    assert call(public, "memory_get", key="plan") == {"found": False, "key": "plan"}


def test_agent_arguments_cannot_write_for_another_agent(store):
    s = store.session(agent_id="main")
    call(s, "memory_save", key="k", content="mine", agent_id="other", agent="other")
    assert store.session(agent_id="other").get("k") is None
    assert s.get("k").agent_id == "main"


def test_taint_is_read_live_on_every_call(store):
    s = store.session()
    assert call(s, "memory_save", key="a", content="first")["classification"] == "PUBLIC"
    s.escalate(Level.INTERNAL, "tool output")
    assert call(s, "memory_save", key="b", content="second")["classification"] == "INTERNAL"
    other_handle = sm.Session(store, s.id)  # the runtime escalates through another handle
    other_handle.escalate(Level.RESTRICTED, "secret doc")
    assert call(s, "memory_save", key="c", content="third")["classification"] == "RESTRICTED"


def _hidden_history(store: sm.Store) -> None:
    """Records a PUBLIC reader of agent 'main' must never notice."""
    high = store.session(agent_id="main")
    high.escalate(Level.CONFIDENTIAL, "setup")
    high.save("secret-key", "the launch code is swordfish")
    high.save("shared", "confidential version of shared")
    other = store.session(agent_id="stranger")
    other.save("secret-key", "a stranger's note about swordfish")


def _visible_history(store: sm.Store) -> None:
    low = store.session(agent_id="main", session_id="writer")
    low.save("shared", "public version of shared, swordfish free")
    low.save("note", "meeting on friday")


def _reader_answers(store: sm.Store) -> list[str | None]:
    reader = store.session(agent_id="main", session_id="reader")
    calls = [
        ("memory_get", {"key": "secret-key"}),
        ("memory_get", {"key": "never-existed"}),
        ("memory_get", {"key": "shared"}),
        ("memory_search", {"query": "swordfish launch code"}),
        ("memory_search", {"query": ""}),
        ("memory_list", {}),
        ("memory_delete", {"key": "secret-key"}),
        ("memory_delete", {"key": "never-existed"}),
        ("memory_recall", {"query": "swordfish"}),
        ("memory_forget", {"key": "secret-key"}),
        ("memory_export", {}),
    ]
    return [execute(reader, name, args) for name, args in calls]


def test_above_level_is_byte_identical_to_missing():
    with fixed_clock_store() as plain, fixed_clock_store() as loaded:
        _visible_history(plain)
        _hidden_history(loaded)
        _visible_history(loaded)
        clean, noisy = _reader_answers(plain), _reader_answers(loaded)
    assert clean == noisy
    get_hidden, get_missing = clean[0], clean[1]
    assert get_hidden.replace("secret-key", "K") == get_missing.replace("never-existed", "K")
    delete_hidden, delete_missing = clean[6], clean[7]
    assert delete_hidden.replace("secret-key", "K") == delete_missing.replace("never-existed", "K")
    assert "the launch code is" not in "".join(a or "" for a in noisy)
    assert "stranger" not in "".join(a or "" for a in noisy)


@pytest.mark.parametrize(
    ("name", "arguments", "needle"),
    [
        ("memory_save", {"content": "x"}, "key"),
        ("memory_save", {"key": "k"}, "content"),
        ("memory_save", {"key": "", "content": "x"}, "empty"),
        ("memory_save", {"key": 5, "content": "x"}, "string"),
        ("memory_save", {"key": "k", "content": ""}, "empty"),
        ("memory_save", {"key": "k", "content": ["x"]}, "string"),
        ("memory_save", {"key": "k" * 257, "content": "x"}, "limit"),
        ("memory_save", {"key": "a\nb", "content": "x"}, "control"),
        ("memory_save", {"key": "k", "content": "x", "tags": "solo"}, "list"),
        ("memory_save", {"key": "k", "content": "x", "tags": [1]}, "strings"),
        ("memory_save", {"key": "k", "content": "x", "tags": {"a": 1}}, "list"),
        ("memory_save", {"key": "k", "content": "x", "tags": ["stratamem:quarantine"]}, "reserved"),
        ("memory_save", {"key": "k", "content": "x" * (64 * 1024 + 1)}, "limit"),
        ("memory_get", {}, "key"),
        ("memory_get", {"key": None}, "key"),
        ("memory_get", {"key": ["k"]}, "string"),
        ("memory_search", {}, "query"),
        ("memory_search", {"query": 3}, "string"),
        ("memory_list", {"tag": ""}, "empty"),
        ("memory_list", {"tag": 7}, "string"),
        ("memory_delete", {"key": ""}, "empty"),
    ],
)
def test_bad_arguments_are_validation_errors(store, name, arguments, needle):
    s = store.session()
    text = execute(s, name, arguments)
    data = json.loads(text)
    assert data["error"]["code"] == "VALIDATION_ERROR"
    assert needle in data["error"]["message"]
    assert s.list() == []


@pytest.mark.parametrize("arguments", [None, "key=a", ["key", "a"], 42, ("key",)])
def test_arguments_must_be_an_object(store, arguments):
    assert error_code(execute(store.session(), "memory_get", arguments)) == "VALIDATION_ERROR"


def test_error_messages_never_echo_content(store):
    secret = "hunter2-correct-horse"
    text = execute(store.session(), "memory_save", {"key": "k" * 300, "content": secret, "tags": [secret, 1]})
    assert secret not in text


def test_max_results_follows_the_contract(store):
    s = store.session()
    for i in range(12):
        s.save(f"k{i}", "tea and biscuits")
    assert len(call(s, "memory_search", query="tea", max_results=3)["results"]) == 3
    assert len(call(s, "memory_search", query="tea", max_results="many")["results"]) == 10
    assert len(call(s, "memory_search", query="tea", max_results=0)["results"]) == 1
    assert len(call(s, "memory_search", query="tea", max_results=2.0)["results"]) == 2


def test_unknown_tool_is_none_so_executors_can_chain(store):
    s = store.session()
    assert execute(s, "web_search", {"query": "x"}) is None
    assert execute(s, 12, {}) is None
    assert execute(s, "memory_store", {"key": "a", "content": "b"}, profile="triggerfish") is None
    assert execute(s, "memory_save", {"key": "a", "content": "b"}, profile="triggerfish") is not None


def test_every_tool_call_leaves_an_audit_event(store):
    s = store.session()
    calls = [
        ("memory_save", {"key": "a", "content": "b"}),
        ("memory_get", {"key": "a"}),
        ("memory_search", {"query": "b"}),
        ("memory_list", {}),
        ("memory_delete", {"key": "a"}),
        ("memory_delete", {"key": "a"}),
        ("memory_get", {"key": ""}),
        ("memory_save", "not an object"),
        ("memory_save", {"key": "aws", "content": "AKIAIOSFODNN7EXAMPLE"}),
    ]
    for name, arguments in calls:
        execute(s, name, arguments)
    events = [e for e in store.audit_events() if e.operation == "tool.call"]
    assert [e.detail["tool"] for e in events] == [name for name, _ in calls]
    assert [e.outcome for e in events][-4:] == [
        "not_found",
        "validation_error",
        "validation_error",
        "policy_blocked",
    ]
    assert all(e.session_id == s.id for e in events)


def test_storage_failures_become_storage_errors():
    store = new_store()
    s = store.session()
    store.close()
    assert error_code(execute(s, "memory_get", {"key": "a"})) == "STORAGE_ERROR"


def test_unexpected_failures_become_opaque_storage_errors(store, monkeypatch):
    s = store.session()

    def broken(*args, **kwargs):
        raise RuntimeError("leaky internal detail with content")

    monkeypatch.setattr(s, "search", broken)
    text = execute(s, "memory_search", {"query": "x"})
    assert error_code(text) == "STORAGE_ERROR"
    assert "leaky" not in text


def test_lone_surrogates_in_a_query_still_give_utf8_text(store):
    text = execute(store.session(), "memory_search", {"query": "bad \udcff text"})
    text.encode("utf-8")
    assert json.loads(text)["results"] == []


def test_every_operator_only_argument_is_stripped_and_audited(store):
    s = store.session(agent_id="main")
    s.escalate(Level.INTERNAL, "x")
    arguments = {
        "key": "k",
        "content": "v",
        "taint": "PUBLIC",
        "clearance": "RESTRICTED",
        "peers": ["x"],
        "agent": "x",
        "agent_id": "x",
        "level": 0,
        "classification": None,
    }
    assert call(s, "memory_save", **arguments)["classification"] == "INTERNAL"
    assert s.peers == () and s.clearance is Level.RESTRICTED
    decision = next(e for e in store.audit_events() if e.operation == "policy.decision")
    assert decision.detail["stripped"] == [
        "classification",
        "level",
        "taint",
        "clearance",
        "agent_id",
        "agent",
        "peers",
    ]
