from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from turn_fakes import NOW, FakeSession, Level, fixed_clock, hit

from stratamem.turn import (
    ContextConfig,
    EventBus,
    EventLog,
    MemoryRecall,
    Message,
    ValidationError,
    inject_memory_context,
    render_memory_context,
    strip_memory_context,
)

HITS = [
    hit("user_name", "The user is called Alice.", 0.9),
    hit("standup", "Daily standup is at 9:30.", 0.5, category="daily"),
    hit("last_chat", "We discussed the Q3 roadmap.", 0.8, category="conversation"),
]


def cfg(**options: object) -> ContextConfig:
    """These goldens use toy scores (0..1), so the default BM25 floor is off here."""
    options.setdefault("min_relevance", 0.0)
    return ContextConfig(**options)  # type: ignore[arg-type]


DEFAULT = cfg()


def render(hits, origin="interactive", scopes=(), config=DEFAULT, events=None, message="what's up?"):
    return render_memory_context(
        FakeSession(hits=hits), message, origin, scopes, config, events=events, clock=fixed_clock
    )


# -- goldens: origins ---------------------------------------------------------


@pytest.mark.parametrize("origin", ["interactive", "channel", "agent"])
def test_live_origins_without_scope_exclude_conversation(origin: str) -> None:
    assert render(HITS, origin) == (
        "[Memory context]\n"
        "- user_name: The user is called Alice.\n"
        "- standup: Daily standup is at 9:30.\n"
        "[/Memory context]\n\n"
    )


@pytest.mark.parametrize("origin", ["interactive", "channel"])
def test_live_origins_with_scope_include_conversation(origin: str) -> None:
    assert render(HITS, origin, scopes=("chat:42",)) == (
        "[Memory context]\n"
        "- user_name: The user is called Alice.\n"
        "- last_chat: We discussed the Q3 roadmap.\n"
        "- standup: Daily standup is at 9:30.\n"
        "[/Memory context]\n\n"
    )


@pytest.mark.parametrize("origin", ["agent", "cron", "daemon"])
def test_origins_no_person_started_never_see_conversation(origin: str) -> None:
    assert render(HITS, origin, scopes=("chat:42",)) == (
        "[Memory context]\n"
        "- user_name: The user is called Alice.\n"
        "- standup: Daily standup is at 9:30.\n"
        "[/Memory context]\n\n"
    )


def test_subturn_injects_nothing_and_does_not_search() -> None:
    session = FakeSession(hits=HITS)
    assert render_memory_context(session, "hi", "subturn", ("chat:1",), clock=fixed_clock) == ""
    assert session.queries == []


def test_suppress_flag_injects_nothing() -> None:
    assert render(HITS, "interactive", ("chat:1",), cfg(suppress=True)) == ""


def test_unknown_origin_is_a_validation_error() -> None:
    with pytest.raises(ValidationError) as info:
        render(HITS, "webhook")
    assert info.value.code == "VALIDATION_ERROR"


# -- goldens: filters -----------------------------------------------------------


def test_noise_and_stale_payloads_are_skipped() -> None:
    hits = [
        hit("user_msg_1f2e", "I like tea", 0.9),
        hit("assistant_resp_77", "Sure!", 0.9),
        hit("cron_note", "[cron:daily] run report", 0.9),
        hit("beat", "[heartbeat task 3] ping", 0.9),
        hit("old_block", "[Memory context]\n- a: b\n[/Memory context]", 0.9),
        hit("chat_history", "user: hi\nassistant: hello", 0.9),
        hit("tool_dump", 'ls said <tool_result id="1">a b c</tool_result>', 0.9),
        hit("photo", "Look: [IMAGE:/tmp/cat.png]", 0.9),
        hit("keeper", "Prefers metric units.", 0.1),
    ]
    assert render(hits) == "[Memory context]\n- keeper: Prefers metric units.\n[/Memory context]\n\n"


def test_relevance_floor_keeps_unscored_entries() -> None:
    hits = [
        hit("weak", "barely related", 0.1),
        hit("strong", "very related", 0.7),
        hit("unscored", "from a list", 0.0),
    ]
    assert render(hits, config=cfg(min_relevance=0.3)) == (
        "[Memory context]\n- strong: very related\n- unscored: from a list\n[/Memory context]\n\n"
    )


def test_older_non_core_entries_decay_core_does_not() -> None:
    two_weeks_ago = NOW - timedelta(days=14)
    hits = [
        hit("old_daily", "Sprint 3 started.", 0.8, category="daily", updated_at=two_weeks_ago),  # 0.8 -> 0.2
        hit("old_core", "Works in Berlin.", 0.3, category="core", updated_at=two_weeks_ago),  # stays 0.3
        hit("fresh_daily", "Sprint 5 started.", 0.25, category="daily"),  # stays 0.25
    ]
    assert render(hits) == (
        "[Memory context]\n"
        "- old_core: Works in Berlin.\n"
        "- fresh_daily: Sprint 5 started.\n"
        "- old_daily: Sprint 3 started.\n"
        "[/Memory context]\n\n"
    )
    # the floor applies to the decayed score
    assert render(hits, config=cfg(min_relevance=0.22)) == (
        "[Memory context]\n- old_core: Works in Berlin.\n- fresh_daily: Sprint 5 started.\n[/Memory context]\n\n"
    )
    # a custom half-life changes the decay
    assert "old_daily" in render(hits, config=cfg(min_relevance=0.5, half_life_days=1000))


# -- goldens: bounds and flags ----------------------------------------------------


def test_at_most_max_entries() -> None:
    hits = [hit(f"k{i}", f"fact {i}", 1.0 - i / 10) for i in range(6)]
    assert render(hits) == (
        "[Memory context]\n- k0: fact 0\n- k1: fact 1\n- k2: fact 2\n- k3: fact 3\n[/Memory context]\n\n"
    )
    assert render(hits, config=cfg(max_entries=1)) == "[Memory context]\n- k0: fact 0\n[/Memory context]\n\n"
    assert render(hits, config=cfg(max_entries=0)) == ""


def test_long_entries_are_cut_with_ellipsis() -> None:
    block = render([hit("essay", "x" * 1000, 0.9)])
    assert block == "[Memory context]\n- essay: " + "x" * 797 + "...\n[/Memory context]\n\n"
    short = render([hit("essay", "abcdefghij", 0.9)], config=cfg(max_entry_chars=6))
    assert short == "[Memory context]\n- essay: abc...\n[/Memory context]\n\n"


def test_total_budget_stops_at_first_overflowing_entry() -> None:
    hits = [hit("a", "1" * 20, 0.9), hit("b", "2" * 40, 0.8), hit("c", "3", 0.7)]
    # header 17 + footer 19 + "- a: " line 26 = 62; "- b: ..." would add 46
    config = cfg(max_total_chars=80)
    assert render(hits, config=config) == "[Memory context]\n- a: " + "1" * 20 + "\n[/Memory context]\n\n"
    assert render(hits, config=cfg(max_total_chars=61)) == ""


def test_default_total_budget_is_4000_characters() -> None:
    hits = [hit(f"key{i}", "y" * 2000, 1.0) for i in range(4)]
    block = render(hits, config=cfg(max_entry_chars=1500))
    assert len(block) <= 4000
    assert block.count("\n- key") == 2


def test_level_labels() -> None:
    hits = [
        hit("salary", "Alice earns 10.", 0.9, level=Level.CONFIDENTIAL),
        hit("tz", "UTC+1", 0.5, level=Level.PUBLIC),
    ]
    assert render(hits, config=cfg(show_levels=True)) == (
        "[Memory context]\n- salary [CONFIDENTIAL]: Alice earns 10.\n- tz [PUBLIC]: UTC+1\n[/Memory context]\n\n"
    )


def test_nothing_recalled_renders_empty_string() -> None:
    assert render([]) == ""


# -- events and failure ------------------------------------------------------------


def test_one_recall_event_per_render() -> None:
    log = EventLog()
    render(HITS, events=EventBus([log], tracer=None))
    assert log.events == [MemoryRecall(origin="interactive", entry_count=2, success=True)]


def test_failing_backend_yields_empty_block_and_failed_event() -> None:
    log = EventLog()
    session = FakeSession(hits=HITS, fail_search=True)
    block = render_memory_context(
        session, "hi", "interactive", events=EventBus([log], tracer=None), clock=fixed_clock
    )
    assert block == ""
    (event,) = log.of_type(MemoryRecall)
    assert not event.success and event.entry_count == 0
    assert "ConnectionError" in event.error


def test_subturn_still_emits_one_event() -> None:
    log = EventLog()
    render(HITS, "subturn", events=EventBus([log], tracer=None))
    assert log.events == [MemoryRecall(origin="subturn", entry_count=0, success=True, suppressed=True)]


# -- injection ---------------------------------------------------------------------

BLOCK = "[Memory context]\n- user_name: Alice\n[/Memory context]\n\n"


def test_inject_prepends_to_last_user_message_only() -> None:
    messages = [
        Message("system", "be nice"),
        Message("user", "first"),
        Message("assistant", "ok"),
        Message("user", "second"),
        Message("assistant", "thinking"),
    ]
    result = inject_memory_context(messages, BLOCK)
    assert result[1].content == "first"
    assert result[3].content == BLOCK + "second"
    assert messages[3].content == "second"  # the input is not changed


def test_inject_is_idempotent_on_retry() -> None:
    messages = [Message("user", "hello")]
    once = inject_memory_context(messages, BLOCK)
    twice = inject_memory_context(once, BLOCK)
    assert once == twice
    newer = inject_memory_context(twice, "[Memory context]\n- x: y\n[/Memory context]\n\n")
    assert newer[0].content == "[Memory context]\n- x: y\n[/Memory context]\n\nhello"
    assert inject_memory_context(newer, "")[0].content == "hello"


def test_inject_without_user_message_changes_nothing() -> None:
    messages = [Message("system", "s")]
    assert inject_memory_context(messages, BLOCK) == messages


@given(st.text(), st.lists(st.text(alphabet="ab: \n-", max_size=30), max_size=4))
def test_strip_undoes_inject(user_text: str, contents: list[str]) -> None:
    hits = [hit(f"k{i}", c or "z", 0.5) for i, c in enumerate(contents)]
    block = render(hits)
    injected = inject_memory_context([Message("user", user_text)], block)[0].content
    assert strip_memory_context(injected) == strip_memory_context(user_text)
    assert inject_memory_context([Message("user", injected)], block)[0].content == injected


@given(
    st.lists(st.tuples(st.text(min_size=1, max_size=300), st.floats(0, 1)), max_size=10),
    st.integers(0, 2000),
    st.integers(0, 10),
)
def test_block_respects_all_bounds(entries, total, max_entries) -> None:
    hits = [hit(f"key{i}", content, score) for i, (content, score) in enumerate(entries)]
    config = cfg(max_total_chars=total, max_entries=max_entries, max_entry_chars=120)
    block = render(hits, config=config)
    assert len(block) <= total
    assert block.count("\n- key") <= max_entries
