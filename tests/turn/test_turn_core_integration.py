"""The turn layer against the real core store, not a fake session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

sm = pytest.importorskip("stratamem.store")

from stratamem.turn import HistoryStore, Turn  # noqa: E402


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def test_turn_with_a_real_session() -> None:
    clock = Clock()
    store = sm.Store(":memory:", clock=clock)
    session = store.session("main")
    session.save("user_city", "The user Alice lives in Lisbon.", category="core")
    session.escalate("INTERNAL", "read an internal document")
    history = HistoryStore(":memory:")

    turn = Turn(session, history, "chat-1", "interactive", clock=clock)
    prompt = turn.begin("Where does Alice live these days, remind me?")
    assert prompt[-1].content == (
        "[Memory context]\n- user_city: The user Alice lives in Lisbon.\n[/Memory context]\n\n"
        "Where does Alice live these days, remind me?"
    )
    turn.end("In Lisbon.")

    assert [s.taint for s in history.messages("chat-1")] == ["INTERNAL", "INTERNAL"]
    saved = {m.key: m for m in session.list()}
    autosaved = [m for key, m in saved.items() if key.startswith("user_msg_")]
    assert len(autosaved) == 1 and autosaved[0].category == "conversation"

    # the autosaved message is noise for recall; the next turn still sees only the fact
    again = Turn(session, history, "chat-1", "interactive", clock=clock).begin("Alice, Lisbon?")
    assert again[-1].content.count("- ") == 1 and "user_city" in again[-1].content
    store.close()
