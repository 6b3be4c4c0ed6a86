"""A query that names a time lifts the memories of that time, on every backend, in every mode it has."""

from datetime import UTC, datetime, timedelta

from stratamem import Level


def may(day: int) -> datetime:
    return datetime(2023, 5, day, 15, tzinfo=UTC)


def test_a_named_month_lifts_its_memories_and_hides_none(store):
    s = store.session("main")
    s.save_many(
        [
            {
                "key": "march",
                "content": "Caroline painted a sunrise over the lake",
                "occurred_at": datetime(2023, 3, 2, tzinfo=UTC),
            },
            {"key": "may", "content": "Caroline painted a sunrise over the lake", "occurred_at": may(20)},
            {"key": "unknown", "content": "Caroline painted horses"},
        ]
    )
    plain = {h.memory.key: h.score for h in s.search("what did Caroline paint?", mode="lexical")}
    assert plain["march"] == plain["may"]  # the same words: the same score, until a time is named
    named = s.search("what did Caroline paint in May 2023?", mode="lexical")
    assert named[0].memory.key == "may"
    assert {h.memory.key for h in named} == {"march", "may", "unknown"}  # a boost, never a filter
    by_key = {h.memory.key: h.score for h in named}
    assert by_key["may"] == by_key["march"] * 1.5


def test_relative_times_follow_the_store_clock(store):
    s = store.session("main")
    now = store.now()
    s.save_many(
        [
            {
                "key": "old",
                "content": "the team met the auditors",
                "occurred_at": datetime(2020, 1, 6, tzinfo=UTC),
            },
            {"key": "new", "content": "the team met the auditors", "occurred_at": now},
        ]
    )
    assert s.search("when did the team meet the auditors today?", mode="lexical")[0].memory.key == "new"
    assert s.search("the auditors in 2020", mode="lexical")[0].memory.key == "old"


def test_the_boost_sees_only_what_the_session_may_see(store):
    low = store.session("main")
    low.save("plan", "the launch plan is ready", occurred_at=may(1))
    high = store.session("main")
    high.escalate(Level.CONFIDENTIAL, "x")
    high.save("plan", "the launch plan moved", occurred_at=may(2))
    high.save("secret", "the launch plan of project X", occurred_at=may(3))
    hits = low.search("launch plan in May", mode="lexical")
    assert [(h.memory.key, h.memory.content) for h in hits] == [("plan", "the launch plan is ready")]


def test_a_query_about_a_time_alone_answers_with_that_times_memories(store):
    s = store.session("main")
    now = store.now()
    s.save_many(
        [
            {
                "key": "lunch",
                "content": "lunch with Dana at the harbour",
                "occurred_at": now - timedelta(days=7),
            },
            {"key": "today", "content": "dentist appointment", "occurred_at": now},
            {"key": "may", "content": "Caroline painted a sunrise", "occurred_at": may(20)},
            {
                "key": "may-old",
                "content": "Caroline moved to Lisbon",
                "occurred_at": datetime(2019, 5, 3, tzinfo=UTC),
            },
        ]
    )
    assert [h.memory.key for h in s.search("what happened last week?")] == ["lunch"]
    assert [(h.memory.key, h.score) for h in s.search("what did she do in May 2023?")] == [("may", 0.0)]
    assert {h.memory.key for h in s.search("what did she do in May?")} == {"may", "may-old"}
    assert s.search("anything from 1999?") == []
