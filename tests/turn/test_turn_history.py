from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from turn_fakes import Level

from stratamem.turn import HistoryStore, Message, ToolCallRequest, ValidationError, trim_history


def conversation() -> list[Message]:
    return [
        Message("system", "You are terse."),
        Message("user", "list files " + "x" * 200),
        Message("assistant", "", tool_calls=(ToolCallRequest("call_1", "shell", '{"cmd": "ls"}'),)),
        Message("tool", "a.txt b.txt " + "y" * 200, tool_call_id="call_1"),
        Message("assistant", "Two files."),
        Message("user", "thanks"),
        Message("assistant", "You're welcome."),
    ]


def test_history_survives_reopen_with_taint_labels(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    with HistoryStore(db) as store:
        for i, message in enumerate(conversation()):
            store.append("s1", message, taint=Level.CONFIDENTIAL if i >= 5 else Level.PUBLIC)
        store.append("s2", Message("user", "other session"))
    with HistoryStore(str(db)) as reopened:
        assert reopened.transcript("s1") == conversation()
        stored = reopened.messages("s1")
        assert [s.seq for s in stored] == list(range(7))
        assert [s.taint for s in stored] == ["PUBLIC"] * 5 + ["CONFIDENTIAL"] * 2
        assert reopened.messages("s2")[0].taint is None
        assert reopened.session_ids() == ["s1", "s2"]
        assert reopened.count("s1") == 7


def test_trimmed_turns_fetchable_by_range(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.db")
    for message in conversation():
        store.append("s1", message)
    transcript = store.transcript("s1")
    result = trim_history(transcript, 40)
    assert result.turns_dropped == 1
    start, end = result.omitted_range  # type: ignore[misc]
    fetched = [s.message for s in store.messages("s1", start, end)]
    assert fetched == [transcript[i] for i in result.dropped_indices]
    assert fetched[0] == Message("user", "list files " + "x" * 200)
    assert store.count("s1") == 7  # trimming is lossless


def test_shared_connection_is_not_closed() -> None:
    conn = sqlite3.connect(":memory:")
    store = HistoryStore(conn)
    store.append("s", Message("user", "hi"))
    store.close()
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"history_messages"}


def test_ranges_and_validation(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.db")
    for i in range(5):
        store.append("s", Message("user", str(i)))
    assert [s.message.content for s in store.messages("s", 1, 3)] == ["1", "2"]
    assert [s.message.content for s in store.messages("s", 3)] == ["3", "4"]
    with pytest.raises(ValidationError):
        store.messages("s", 3, 1)
    with pytest.raises(ValidationError):
        store.append("", Message("user", "x"))
    assert store.delete_session("s") == 5
    assert store.transcript("s") == []


def test_surrogate_pairs_are_stored_as_characters(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.db")
    store.append("s", Message("user", "smile \ud83d\ude00 lone \ud800"))
    assert store.transcript("s")[0].content == "smile \U0001f600 lone \ufffd"


def test_history_is_not_searchable() -> None:
    assert not hasattr(HistoryStore, "search")
