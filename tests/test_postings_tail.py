"""Single writes' postings in an append-only tail (storage/sqlite/postings_tail.py): answers never depend on
whether, or when, the tail was folded into ``postings``."""

from __future__ import annotations

from unittest import mock

from conftest import FakeClock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratamem as sm
from stratamem import Level, NotFound
from stratamem.storage.sql import pruning
from stratamem.storage.sqlite import postings_tail

WORDS = ["apple", "banana", "river", "running", "runs", "blue", "meeting", "friday", "tea", "coffee"]
QUERIES = ["apple river", "running tea coffee", "blue", "friday meeting banana apple", "runs"]
AGENTS = ["a", "b"]

content = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
op = st.one_of(
    st.tuples(
        st.just("save"), st.sampled_from(AGENTS), st.sampled_from(list(Level)), st.integers(0, 5), content
    ),
    st.tuples(st.just("delete"), st.sampled_from(AGENTS), st.sampled_from(list(Level)), st.integers(0, 5)),
    st.tuples(
        st.just("batch"),
        st.sampled_from(AGENTS),
        st.sampled_from(list(Level)),
        st.lists(st.tuples(st.integers(0, 8), content), min_size=2, max_size=4),
    ),
)


def apply(store: sm.Store, step: tuple) -> None:
    kind, agent, level = step[0], step[1], step[2]
    s = store.session(agent)
    if level > Level.PUBLIC:
        s.escalate(level, "test")
    if kind == "save":
        s.save(f"k{step[3]}", step[4])
    elif kind == "delete":
        try:
            s.delete(f"k{step[3]}")
        except NotFound:
            pass
    else:
        s.save_many([{"key": f"k{k}", "content": c} for k, c in step[3]])


def answers(store: sm.Store) -> list:
    """Every query from sessions of both agents (one with the other as peer) at every taint, both
    exhaustive and with a forced MaxScore split: keys, order and scores, compared exactly."""
    out = []
    for agent, peers in (("a", ()), ("b", ("a",))):
        for taint in Level:
            s = store.session(agent, peers=peers)
            if taint > Level.PUBLIC:
                s.escalate(taint, "test")
            for chooser in (lambda f, w: len(f), lambda f, w: min(1, len(f))):  # exhaustive, split
                with mock.patch.object(pruning, "essential_terms", chooser):
                    for q in QUERIES:
                        out.append([(h.memory.key, h.memory.agent_id, h.score) for h in s.search(q, 5)])
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(op, min_size=1, max_size=25))
def test_folded_and_unfolded_tails_answer_identically(steps):
    """One store folds every few rows, the other never; then the other folds once: three identical answers."""
    often, never = sm.open_store(":memory:", clock=FakeClock()), sm.open_store(":memory:", clock=FakeClock())
    try:
        for step in steps:
            with mock.patch.object(postings_tail, "FOLD_AT", 3):
                apply(often, step)
            with mock.patch.object(postings_tail, "FOLD_AT", 10**9):
                apply(never, step)
        unfolded = answers(never)
        assert answers(often) == unfolded
        with never.backend._tx(write=True) as conn:
            postings_tail.fold(conn)
            assert conn.execute("SELECT count(*) FROM postings_tail").fetchone()[0] == 0
        assert answers(never) == unfolded
    finally:
        often.close()
        never.close()


def test_a_single_save_goes_to_the_tail_and_a_full_tail_is_folded(tmp_path, monkeypatch):
    monkeypatch.setattr(postings_tail, "FOLD_AT", 10)
    with sm.open_store(str(tmp_path / "t.db")) as store:
        s = store.session("a")
        conn = store.backend._conn
        s.save("k0", "apple river blue")  # four terms: the key is indexed too
        assert conn.execute("SELECT count(*) FROM postings_tail").fetchone()[0] == 4
        assert conn.execute("SELECT count(*) FROM postings").fetchone()[0] == 0
        s.save("k0", "tea coffee")  # a replacement takes the old postings out of the tail
        assert sorted(r[0] for r in conn.execute("SELECT term FROM postings_tail")) == ["coffe", "k0", "tea"]
        s.save("k1", "apple river blue")
        assert conn.execute("SELECT count(*) FROM postings_tail").fetchone()[0] == 7
        s.save("k2", "apple river blue")  # the tail's last row id reaches ten: folded
        assert conn.execute("SELECT count(*) FROM postings_tail").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM postings").fetchone()[0] == 11
        for i in range(3, 5):
            s.save(f"k{i}", "apple river blue")
        s.delete("k1")  # out of postings
        s.delete("k4")  # out of the tail
        total = conn.execute(
            "SELECT count(*) FROM (SELECT memory_id FROM postings UNION ALL SELECT memory_id FROM postings_tail)"
        ).fetchone()[0]
        assert total == 3 + 4 + 4  # k0, k2, k3
        assert [h.memory.key for h in s.search("apple", 10)] == ["k2", "k3"]
