from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratamem.turn import EventBus, EventLog, HistoryTrimmed, Message, ToolCallRequest, ValidationError
from stratamem.turn.trim import (
    BREADCRUMB,
    is_breadcrumb,
    message_tokens,
    split_turns,
    sweep_orphans,
    trim_history,
)


def call(call_id: str, name: str = "shell") -> ToolCallRequest:
    return ToolCallRequest(call_id, name, '{"cmd": "ls"}')


def orphans(messages: Sequence[Message]) -> list[str]:
    """Tool call ids without a later result, and results without an earlier call."""
    problems: list[str] = []
    pending: set[str] = set()
    for message in messages:
        if message.role == "assistant":
            pending.update(c.id for c in message.tool_calls)
        elif message.role == "tool":
            if message.tool_call_id in pending:
                pending.discard(message.tool_call_id)
            else:
                problems.append(f"result {message.tool_call_id}")
    return problems + [f"call {c}" for c in sorted(pending)]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Message], int]:
    """Random histories; returns them with the index of the newest user message.

    The newest turn is well formed; older turns may hold orphans.
    """
    ids = (f"c{i}" for i in itertools.count())
    text = st.integers(0, 120).map(lambda n: "w" * n)
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message("system", draw(text)))
    if draw(st.booleans()):
        messages.append(Message("assistant", "Hello! How can I help?"))
    n_turns = draw(st.integers(1, 6))
    newest_start = 0
    for turn in range(n_turns):
        newest = turn == n_turns - 1
        if newest:
            newest_start = len(messages)
        messages.append(Message("user", draw(text)))
        kinds = ["text", "tools", "system"] + ([] if newest else ["orphan_result", "orphan_call"])
        for kind in draw(st.lists(st.sampled_from(kinds), max_size=4)):
            if kind == "text":
                messages.append(Message("assistant", draw(text)))
            elif kind == "system":
                messages.append(Message("system", draw(text)))
            elif kind == "tools":
                calls = [call(next(ids)) for _ in range(draw(st.integers(1, 3)))]
                messages.append(Message("assistant", draw(text), tool_calls=tuple(calls)))
                messages.extend(Message("tool", draw(text), tool_call_id=c.id) for c in calls)
            elif kind == "orphan_result":
                messages.append(Message("tool", "lost", tool_call_id=next(ids)))
            else:
                messages.append(Message("assistant", draw(text), tool_calls=(call(next(ids)),)))
    return messages, newest_start


def cost(messages: Sequence[Message]) -> int:
    return sum(message_tokens(m) for m in messages)


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 600))
def test_trim_invariants(history: tuple[list[Message], int], budget: int) -> None:
    messages, newest_start = history
    result = trim_history(messages, budget)
    out = list(result.messages)

    assert orphans(out) == []
    assert [m for m in out if m.role == "system" and not is_breadcrumb(m)] == [
        m for m in messages if m.role == "system"
    ]
    newest = messages[newest_start:]
    assert out[len(out) - len(newest) :] == newest
    assert sum(is_breadcrumb(m) for m in out) == (1 if result.turns_dropped else 0)
    if result.turns_dropped:
        crumb = out.index(BREADCRUMB)
        assert all(m.role == "system" for m in out[:crumb])
        assert out[crumb + 1].role != "system"
    kept_turns = split_turns(out)
    assert result.tokens_after == cost(out)
    assert result.tokens_after <= budget or len(kept_turns) == 1

    again = trim_history(out, budget)
    assert list(again.messages) == out
    assert sum(is_breadcrumb(m) for m in again.messages) == (1 if result.turns_dropped else 0)


@given(histories(), st.integers(0, 600))
def test_dropped_indices_are_exactly_what_is_missing(history: tuple[list[Message], int], budget: int) -> None:
    messages, _ = history
    result = trim_history(messages, budget)
    kept = [m for i, m in enumerate(messages) if i not in result.dropped_indices]
    # kept messages appear in order (assistant messages may have lost orphan calls)
    out = [m for m in result.messages if not is_breadcrumb(m)]
    assert len(out) == len(kept)
    for original, trimmed in zip(kept, out, strict=True):
        assert (original.role, original.content, original.tool_call_id) == (
            trimmed.role,
            trimmed.content,
            trimmed.tool_call_id,
        )


def test_drops_oldest_whole_turns_and_keeps_pairs() -> None:
    messages = [
        Message("system", "You are helpful."),
        Message("user", "u1 " + "x" * 100),
        Message("assistant", "", tool_calls=(call("a"),)),
        Message("tool", "r" * 100, tool_call_id="a"),
        Message("assistant", "done 1"),
        Message("user", "u2"),
        Message("assistant", "a2"),
        Message("user", "u3"),
        Message("assistant", "a3"),
    ]
    log = EventLog()
    result = trim_history(messages, 80, session_id="s1", events=EventBus([log], tracer=None))
    assert list(result.messages) == [
        Message("system", "You are helpful."),
        BREADCRUMB,
        Message("user", "u2"),
        Message("assistant", "a2"),
        Message("user", "u3"),
        Message("assistant", "a3"),
    ]
    assert result.dropped_indices == (1, 2, 3, 4)
    assert result.omitted_range == (1, 5)
    assert (result.messages_dropped, result.turns_dropped) == (4, 1)
    (event,) = log.of_type(HistoryTrimmed)
    assert (event.session_id, event.messages_dropped, event.turns_dropped) == ("s1", 4, 1)


def test_newest_turn_kept_even_over_budget() -> None:
    messages = [Message("user", "old"), Message("user", "x" * 1000)]
    result = trim_history(messages, 10)
    assert list(result.messages) == [BREADCRUMB, Message("user", "x" * 1000)]


def test_nothing_to_drop_means_no_breadcrumb_and_no_event() -> None:
    log = EventLog()
    messages = [Message("user", "hi"), Message("assistant", "hello")]
    result = trim_history(messages, 1000, events=EventBus([log], tracer=None))
    assert list(result.messages) == messages
    assert log.events == []


def test_pluggable_token_counter() -> None:
    messages = [Message("user", "one two"), Message("assistant", "three"), Message("user", "four")]
    words = trim_history(messages, 100, counter=lambda s: len(s.split()) * 50)
    assert words.turns_dropped == 1


def test_orphan_sweep() -> None:
    messages = [
        Message("tool", "stray", tool_call_id="nope"),
        Message("assistant", "let me check", tool_calls=(call("a"), call("b"))),
        Message("tool", "A", tool_call_id="a"),
        Message("assistant", "", tool_calls=(call("c"),)),
        Message("tool", "A again", tool_call_id="a"),
    ]
    assert sweep_orphans(messages) == [
        Message("assistant", "let me check", tool_calls=(call("a"),)),
        Message("tool", "A", tool_call_id="a"),
    ]


def test_negative_budget_refused() -> None:
    with pytest.raises(ValidationError):
        trim_history([], -1)
