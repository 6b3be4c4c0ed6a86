"""The transcript tail kept between prompts (``turn.tail_cache``) never serves a wrong tail.

The cached read asks the store only for what follows its mark; whatever else
happens to the transcript (another process appends, a purge removes the
oldest messages, the taint rises) the prompt must equal one built from a
fresh read of the store.
"""

from __future__ import annotations

from datetime import timedelta

from conftest import FakeClock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratamem as sm
from stratamem.turn import Message, Transcript
from stratamem.turn.retention import Retention


def uncached(store: sm.Store, session_id: str, window: int) -> tuple[int, list[Message]]:
    """The tail as a reader without any cache sees it."""
    session = sm.Session(store, session_id)
    transcript = Transcript(session)
    transcript._cache = None
    return transcript.tail(window)


def second_handle(store: sm.Store) -> sm.Store | None:
    """Another store on the same database, as another process would open it (None for ``:memory:``)."""
    return None if store.url == ":memory:" else sm.open_store(store.url, clock=store.clock)


def test_the_prompt_sees_what_another_process_appended(store) -> None:
    session = store.session("main")
    first = session.turn("first question")
    first.end("first answer")
    other = second_handle(store)
    try:
        writer = sm.Session(other, session.id) if other is not None else session
        Transcript(writer).append(Message("user", "written elsewhere"), Message("assistant", "seen"))
        turn = session.turn("second question")
        contents = [m.content for m in turn.messages() if m.role != "system"]
        assert "written elsewhere" in contents and contents[-1].startswith("second question")
        assert Transcript(session).tail(200) == uncached(store, session.id, 200)
    finally:
        if other is not None:
            other.close()


def test_a_purge_and_a_raised_taint_are_not_served_from_the_cache(make_store) -> None:
    clock = FakeClock()
    store = make_store(clock=clock, retention=Retention(transcript_days=1))
    session = store.session("main")
    transcript = Transcript(session)
    for i in range(6):
        transcript.append(Message("user", f"old {i}"), Message("assistant", f"old answer {i}"))
    assert transcript.tail(8) == uncached(store, session.id, 8)
    clock.advance(timedelta(days=2).total_seconds())
    transcript.append(Message("user", "new"))
    store.purge(clock())  # the old ones go: every position shifts
    assert transcript.tail(8) == uncached(store, session.id, 8)
    assert transcript.tail(8)[0] == 0
    session.escalate("CONFIDENTIAL", "read a file")
    transcript.append(Message("assistant", "confidential answer"))
    assert transcript.tail(8) == uncached(store, session.id, 8)


def test_a_wider_window_is_read_whole(store) -> None:
    session = store.session("main")
    transcript = Transcript(session)
    for i in range(10):
        transcript.append(Message("user", f"q{i}"), Message("assistant", f"a{i}"))
    assert transcript.tail(4) == uncached(store, session.id, 4)
    assert transcript.tail(12) == uncached(store, session.id, 12)
    assert transcript.tail(3) == uncached(store, session.id, 3)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("own"), st.integers(1, 4)),
        st.tuples(st.just("other"), st.integers(1, 4)),
        st.tuples(st.just("read"), st.integers(1, 12)),
        st.tuples(st.just("turn"), st.integers(1, 12)),
        st.tuples(st.just("escalate"), st.sampled_from(["INTERNAL", "CONFIDENTIAL"])),
    ),
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_cached_tails_equal_fresh_reads_whatever_happens(tmp_path_factory, ops) -> None:
    path = tmp_path_factory.mktemp("tail") / "memory.db"
    store, other = sm.open_store(str(path)), sm.open_store(str(path))
    try:
        session = store.session("main")
        transcript = Transcript(session)
        for n, (op, arg) in enumerate(ops):
            if op == "own":
                transcript.append(*(Message("user", f"own {n}.{i}") for i in range(arg)))
            elif op == "other":
                Transcript(sm.Session(other, session.id)).append(
                    *(Message("assistant", f"other {n}.{i}") for i in range(arg))
                )
            elif op == "escalate":
                if session.record.taint < sm.Level.parse(arg):
                    session.escalate(arg, "test")
            elif op == "turn":
                _, offset, tail = transcript.append_then_tail(Message("user", f"turn {n}"), arg)
                assert (offset, tail) == uncached(store, session.id, arg)
            else:
                assert transcript.tail(arg) == uncached(store, session.id, arg)
    finally:
        other.close()
        store.close()


def test_a_window_replaced_by_another_thread_meanwhile_is_read_whole(store, monkeypatch) -> None:
    session = store.session("main")
    transcript = Transcript(session)
    transcript.append(Message("user", "q"), Message("assistant", "a"))
    transcript.tail(10)
    transcript.append(Message("user", "q2"))
    merge = store.turn_tails.merge
    refused: list[bool] = []

    def racing(session_id, window, sent, page):
        if page.delta and len(refused) < 2:  # as if other threads kept replacing the window
            refused.append(True)
            return None
        return merge(session_id, window, sent, page)

    monkeypatch.setattr(store.turn_tails, "merge", racing)
    assert transcript.tail(10) == uncached(store, session.id, 10) and refused
