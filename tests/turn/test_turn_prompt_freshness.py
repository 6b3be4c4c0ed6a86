"""A prompt never serves a memory that is gone: every prompt of a turn recalls anew.

The memory context is not kept from ``begin`` (nor, on the server, between
requests): after a delete, a purge, an expiry or a console delete — by this
process or any other on the same store — the next prompt no longer carries it.
What the turn itself wrote (its autosaved message, memories created since it
began) stays out of its block, as it did when the block was rendered once.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest

import stratamem as sm
from stratamem.operator import OperatorView

DOOR = "the door code is 4711"


def prompt_text(turn: sm.turn.Turn) -> str:
    return "\n".join(m.content for m in turn.messages())


def begun(session: sm.Session) -> sm.turn.Turn:
    session.save("door-code", DOOR)
    turn = session.turn("what is the door code?")
    assert "4711" in prompt_text(turn)
    return turn


def test_a_deleted_memory_leaves_the_next_prompt(store) -> None:
    session = store.session("main")
    turn = begun(session)
    session.delete("door-code")
    assert "4711" not in prompt_text(turn)


def test_an_expired_memory_leaves_the_next_prompt(store) -> None:
    session = store.session("main")
    session.save("door-code", DOOR, ttl=timedelta(seconds=60))
    turn = session.turn("what is the door code?")
    assert "4711" in prompt_text(turn)
    store.clock.advance(120)
    assert "4711" not in prompt_text(turn)


def test_a_console_delete_and_a_purge_leave_the_next_prompt(store) -> None:
    session = store.session("main")
    turn = begun(session)
    console = OperatorView.open(store, "RESTRICTED", "ops")
    console.session_at("main", sm.Level.PUBLIC).delete("door-code")
    assert "4711" not in prompt_text(turn)
    store.purge(store.now() + timedelta(days=1))
    assert "4711" not in prompt_text(turn)


def test_a_changed_memory_shows_as_it_is_now(store) -> None:
    session = store.session("main")
    turn = begun(session)
    session.save("door-code", "the door code was changed; ask the caretaker")
    text = prompt_text(turn)
    assert "4711" not in text and "caretaker" in text


def test_what_the_turn_wrote_stays_out_of_its_prompt(store) -> None:
    session = store.session("main")
    session.save("door-code", DOOR)
    turn = session.turn("what is the door code? I wrote it down somewhere")
    first = turn.messages()
    session.save("door-note", "door code reminder written during the turn")
    assert turn.messages() == first  # neither the autosaved question nor the new memory
    assert "reminder" not in prompt_text(sm.turn.Turn.resume(session, turn.id or 0))


@pytest.mark.parametrize("backend", ["sqlite", "markdown"])
def test_a_delete_and_a_purge_by_another_process_leave_the_next_prompt(tmp_path, backend) -> None:
    url = str(tmp_path / "m.db") if backend == "sqlite" else f"markdown://{tmp_path / 'md'}"
    store = sm.open_store(url)
    try:
        session = store.session("main")
        turn = begun(session)
        other = sm.open_store(url)  # another handle: nothing shared in memory with this one
        try:
            other.session("main", session.id).delete("door-code")
        finally:
            other.close()
        assert "4711" not in prompt_text(turn)
        later = (store.now() + timedelta(days=1)).isoformat()
        purge = [sys.executable, "-m", "stratamem", "--db", url, "purge", "--before", later]
        done = subprocess.run(purge, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "4711" not in prompt_text(turn)
    finally:
        store.close()
