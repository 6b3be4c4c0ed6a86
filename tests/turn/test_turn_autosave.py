from __future__ import annotations

import pytest
from turn_fakes import FakeSession

from stratamem.turn import (
    AutosavePolicy,
    EventBus,
    EventLog,
    MemoryStore,
    TurnSettings,
    ValidationError,
    autosave_key,
    autosave_user_message,
    should_autosave,
)

LONG = "I moved to Lisbon last month and work remotely."


@pytest.mark.parametrize(
    ("message", "origin", "expected"),
    [
        (LONG, "interactive", True),
        (LONG, "channel", True),
        (LONG, "agent", False),
        (LONG, "cron", False),
        (LONG, "daemon", False),
        (LONG, "subturn", False),
        ("ok thanks", "interactive", False),  # too short
        ("   " + "x" * 19 + "   ", "interactive", False),  # length after stripping
        ("[cron:daily] summarise the inbox for the user", "interactive", False),
        ("[heartbeat task 7] check the queue and report", "interactive", False),
        ("[Memory context]\n- a: b\n[/Memory context]\n\n" + LONG, "interactive", False),
    ],
)
def test_should_autosave(message: str, origin: str, expected: bool) -> None:
    assert should_autosave(message, origin, AutosavePolicy()) is expected


def test_policy_settings() -> None:
    assert not should_autosave(LONG, "interactive", AutosavePolicy(enabled=False))
    assert should_autosave(LONG, "cron", AutosavePolicy(origins=frozenset({"cron"})))
    assert should_autosave("hi", "interactive", AutosavePolicy(min_chars=2))
    with pytest.raises(ValidationError):
        AutosavePolicy(origins=frozenset({"webhook"}))
    with pytest.raises(ValidationError):
        AutosavePolicy(min_chars=-1)


def test_saves_as_conversation_with_stable_key() -> None:
    session = FakeSession()
    log = EventLog()
    key = autosave_user_message(session, LONG + "  ", "interactive", events=EventBus([log], tracer=None))
    assert key == autosave_key(LONG) and key.startswith("user_msg_")
    assert session.saved == [(key, LONG, "conversation")]
    assert log.events == [MemoryStore(key=key, category="conversation", success=True)]


def test_not_saved_when_policy_says_no() -> None:
    session = FakeSession()
    assert autosave_user_message(session, "short", "interactive") is None
    assert session.saved == []


def test_failed_save_is_reported_not_raised() -> None:
    log = EventLog()
    session = FakeSession(fail_save=True)
    assert autosave_user_message(session, LONG, "interactive", events=EventBus([log], tracer=None)) is None
    (event,) = log.of_type(MemoryStore)
    assert not event.success and "PermissionError" in event.error


def test_a_turn_saves_the_users_message_unless_told_not_to(store) -> None:
    session = store.session("main")
    session.turn(LONG)
    (saved,) = session.list()
    assert (saved.key, saved.content, saved.category) == (autosave_key(LONG), LONG, "conversation")
    quiet = store.session("main")
    quiet.turn(LONG, settings=TurnSettings(autosave=AutosavePolicy(enabled=False)))
    assert [m.session_id for m in quiet.list(conversations="all")] == [session.id]


def test_the_autosave_category_is_a_setting(store) -> None:
    session = store.session("main")
    session.turn(LONG, settings=TurnSettings(autosave=AutosavePolicy(category="daily")))
    (saved,) = session.list()
    assert (saved.key, saved.category) == (autosave_key(LONG), "daily")
    with pytest.raises(ValidationError) as refused:
        AutosavePolicy(category="")
    assert "AutosavePolicy.category" in refused.value.message
