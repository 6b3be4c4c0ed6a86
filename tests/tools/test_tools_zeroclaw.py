"""The zeroclaw profile's plain-text answers."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from tools_support import START, error_code, new_store

from stratamem import Level
from stratamem.tools import execute
from stratamem.tools.zeroclaw import percent, recall_text


@pytest.fixture
def store():
    with new_store() as opened:
        yield opened


def run(session, name, **arguments):
    return execute(session, name, arguments)


def test_store_and_recall_plain_text(store):
    s = store.session()
    assert run(s, "memory_store", key="lang", content="User prefers Rust") == "Stored memory: lang"
    assert (
        run(s, "memory_store", key="tz", content="Timezone is EST", category="daily") == "Stored memory: tz"
    )
    assert s.get("tz").category == "daily"
    assert (
        run(s, "memory_recall", query="Rust") == "Found 1 memories:\n- [core] lang: User prefers Rust [100%]"
    )
    assert run(s, "memory_recall", query="nothing matches this") == "No memories found."


def test_recall_scores_are_relative_to_the_best_hit(store):
    s = store.session()
    run(s, "memory_store", key="both", content="rust compiler errors")
    run(s, "memory_store", key="one", content="rust is a language among many other languages here")
    lines = run(s, "memory_recall", query="rust compiler").split("\n")
    assert lines[0] == "Found 2 memories:"
    assert lines[1] == "- [core] both: rust compiler errors [100%]"
    assert lines[2].startswith("- [core] one: rust is a language") and lines[2].endswith("%]")
    assert 0 < int(lines[2].rsplit("[", 1)[1][:-2]) < 100


def test_recency_results_carry_no_score(store):
    s = store.session()
    run(s, "memory_store", key="old", content="first")
    run(s, "memory_store", key="new", content="second")
    assert run(s, "memory_recall") == "Found 2 memories:\n- [core] new: second\n- [core] old: first"
    assert run(s, "memory_recall", query="*", limit=1) == "Found 1 memories:\n- [core] new: second"


def test_recall_time_range(store):
    s = store.session()
    run(s, "memory_store", key="a", content="alpha note")
    middle = store.clock.now
    run(s, "memory_store", key="b", content="beta note")
    later = (middle + timedelta(seconds=5)).isoformat()
    assert run(s, "memory_recall", since=middle.isoformat()) == "Found 1 memories:\n- [core] b: beta note"
    assert run(s, "memory_recall", until=middle.isoformat()) == "Found 1 memories:\n- [core] a: alpha note"
    assert run(s, "memory_recall", query="note", since=middle.isoformat(), until=later).startswith(
        "Found 1 memories:\n- [core] b: beta note [100%]"
    )
    assert run(s, "memory_recall", since="2099-01-01T00:00:00Z") == "No memories found."
    assert error_code(run(s, "memory_recall", since="yesterday")) == "VALIDATION_ERROR"
    assert error_code(run(s, "memory_recall", since=later, until=middle.isoformat())) == "VALIDATION_ERROR"


def test_forget(store):
    s = store.session()
    run(s, "memory_store", key="k", content="v")
    assert run(s, "memory_forget", key="k") == "Forgot memory: k"
    assert run(s, "memory_forget", key="k") == "No memory found with key: k"
    assert s.get("k") is None


def test_forget_only_reaches_the_current_level(store):
    s = store.session()
    run(s, "memory_store", key="k", content="public")
    s.escalate(Level.INTERNAL, "x")
    assert run(s, "memory_forget", key="k") == "No memory found with key: k"
    assert s.get("k").content == "public"


def test_export_is_json_lines_with_filters(store):
    s = store.session(agent_id="main")
    run(s, "memory_store", key="a", content="alpha", category="daily")
    run(s, "memory_store", key="b", content="beta")
    other = store.session(agent_id="main")
    run(other, "memory_store", key="c", content="gamma")

    text = run(s, "memory_export")
    header, *lines = text.split("\n")
    assert header == "Exported 3 memories:"
    records = [json.loads(line) for line in lines]
    assert [r["key"] for r in records] == ["a", "b", "c"]
    assert set(records[0]) == {
        "key",
        "content",
        "classification",
        "tags",
        "category",
        "agent_id",
        "session_id",
        "created_at",
        "updated_at",
        "occurred_at",
    }
    assert records[0]["category"] == "daily" and records[0]["classification"] == "PUBLIC"

    assert run(s, "memory_export", category="daily").split("\n")[1:] == [lines[0]]
    by_session = run(s, "memory_export", session_id=other.id).split("\n")
    assert by_session[0] == "Exported 1 memories:" and json.loads(by_session[1])["key"] == "c"
    assert run(s, "memory_export", category="nope") == "No memories found."
    assert run(s, "memory_export", since=(START + timedelta(days=1)).isoformat()) == "No memories found."


def test_export_never_shows_what_is_above_the_taint(store):
    high = store.session()
    high.escalate(Level.RESTRICTED, "x")
    run(high, "memory_store", key="secret", content="classified")
    assert run(store.session(), "memory_export") == "No memories found."


def test_purge_soft_deletes_one_sessions_memories_at_the_current_taint(store):
    writer = store.session(agent_id="main")
    run(writer, "memory_store", key="p1", content="one")
    run(writer, "memory_store", key="p2", content="two")
    writer.escalate(Level.INTERNAL, "x")
    run(writer, "memory_store", key="i1", content="internal one")
    keeper = store.session(agent_id="main")
    run(keeper, "memory_store", key="k1", content="kept")
    peer = store.session(agent_id="peer", session_id=None)
    run(peer, "memory_store", key="x", content="peer's")

    purger = store.session(agent_id="main", peers=("peer",))
    assert (
        run(purger, "memory_purge", session_id=writer.id) == f"Purged 2 memories from session '{writer.id}'"
    )
    assert purger.get("p1") is None and purger.get("p2") is None
    assert purger.get("k1") is not None and purger.get("x") is not None
    assert writer.get("i1") is not None  # INTERNAL, above the purger's taint
    assert (
        run(purger, "memory_purge", session_id="no-such-session")
        == "Purged 0 memories from session 'no-such-session'"
    )
    assert error_code(run(purger, "memory_purge")) == "VALIDATION_ERROR"


def test_store_rejects_secrets_with_the_json_error_shape(store):
    s = store.session()
    text = run(s, "memory_store", key="k", content="export GITHUB=ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    assert error_code(text) == "POLICY_BLOCKED" and "github_token" in text
    assert "ghp_" not in text


def test_pure_formatting():
    assert percent(5.0, 10.0) == 50 and percent(1.0, 0.0) == 0
    assert recall_text([]) == "No memories found."


def test_store_with_a_custom_category_and_bad_category(store):
    s = store.session()
    assert run(s, "memory_store", key="n", content="uses tokio", category="project") == "Stored memory: n"
    assert s.get("n").category == "project"
    assert error_code(run(s, "memory_store", key="n", content="x", category="")) == "VALIDATION_ERROR"
    assert error_code(run(s, "memory_store", key="n", content="x", category=3)) == "VALIDATION_ERROR"
