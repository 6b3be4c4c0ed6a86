"""The operator view behind the console: states, versions, paging, restore, clearance, audit, on every backend."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import FakeClock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratamem as sm
from stratamem.errors import NotFound, PolicyBlocked, ValidationError
from stratamem.operator import OperatorView
from stratamem.storage.sql import console
from stratamem.storage.sql.console import MAX_PAGE


def _seed(store: sm.Store) -> None:
    s = store.session("a")
    s.save("k", "public fact about coffee", tags=["pref"], category="daily")
    s.save("temp", "expires soon", ttl=10)
    s.save("gone", "deleted public note")
    s.delete("gone")
    s.escalate("CONFIDENTIAL", "payroll")
    s.save("k", "confidential fact about payroll")
    s.save("secret", "confidential only 100%_sure")
    store.session("b").save("other", "agent b note")


def _states(view: OperatorView, agent: str = "a", **filters) -> list[tuple[str, str, str]]:
    return [(r.memory.key, r.memory.level.name, r.state) for r in view.memories(view.query(agent, **filters))]


def test_states_versions_and_clearance(store, clock):
    store.clock = clock
    _seed(store)
    clock.advance(60)  # "temp" expires
    top = OperatorView.open(store, "RESTRICTED", "ops")
    assert _states(top) == [
        ("gone", "PUBLIC", "deleted"),
        ("k", "CONFIDENTIAL", "shown"),
        ("k", "PUBLIC", "shadowed"),
        ("secret", "CONFIDENTIAL", "shown"),
        ("temp", "PUBLIC", "expired"),
    ]
    low = OperatorView.open(store, "INTERNAL", "ops")
    # below CONFIDENTIAL the PUBLIC version is the one shown and nothing CONFIDENTIAL is returned or counted
    assert _states(low) == [
        ("gone", "PUBLIC", "deleted"),
        ("k", "PUBLIC", "shown"),
        ("temp", "PUBLIC", "expired"),
    ]
    # "temp" has expired: counted as such, not as live (part_stats keeps it until a purge)
    assert [(a.agent_id, a.live, a.deleted, a.expired) for a in low.agents()] == [
        ("a", {"PUBLIC": 1}, {"PUBLIC": 1}, {"PUBLIC": 1}),
        ("b", {"PUBLIC": 1}, {}, {}),
    ]
    assert [(r.memory.level.name, r.state) for r in top.versions("a", "k")] == [
        ("CONFIDENTIAL", "shown"),
        ("PUBLIC", "shadowed"),
    ]
    assert [r.memory.level.name for r in low.versions("a", "k")] == ["PUBLIC"]
    secret = next(r for r in top.memories(top.query("a")) if r.memory.key == "secret")
    with pytest.raises(NotFound):
        low.record(secret.ref)  # above the clearance answers like a missing record


def test_filters(store):
    _seed(store)
    view = OperatorView.open(store, "RESTRICTED", "ops")
    assert _states(view, tag="pref") == [("k", "PUBLIC", "shadowed")]
    assert _states(view, category="daily") == [("k", "PUBLIC", "shadowed")]
    assert _states(view, status="deleted") == [("gone", "PUBLIC", "deleted")]
    assert [k for k, _, _ in _states(view, text="PAYROLL")] == ["k"]  # case-insensitive, key or content
    assert [k for k, _, _ in _states(view, text="100%_")] == ["secret"]  # LIKE wildcards are literal
    assert _states(view, text="%") == [("secret", "CONFIDENTIAL", "shown")]
    assert [k for k, _, _ in _states(view, level=sm.Level.CONFIDENTIAL)] == ["k", "secret"]
    with pytest.raises(ValidationError):
        view.memories(view.query("a", status="bogus"))
    store.session("a").save("odd", "tags with wildcards", tags=["50%_off", "café", 'say "hi"'])
    for tag in ("50%_off", "café", 'say "hi"'):
        assert [k for k, _, _ in _states(view, tag=tag)] == ["odd"]
    for near in ("50", "%", "CAFÉ", "say", "50x_off"):
        assert _states(view, tag=near) == []


def test_pages_cover_everything_once(store):
    s = store.session("a")
    for i in range(23):
        s.save(f"key-{i:02d}", f"content {i}")
    s.escalate("INTERNAL", "x")
    for i in range(0, 23, 2):
        s.save(f"key-{i:02d}", f"internal {i}")
    view = OperatorView.open(store, "RESTRICTED", "ops")
    seen, after = [], None
    while True:
        page = view.memories(view.query("a", limit=5, after=after))
        seen += [(r.memory.key, r.memory.level.name) for r in page]
        if len(page) < 5:
            break
        last = page[-1]
        after = (last.memory.key, int(last.memory.level), last.ref)
    assert len(seen) == 35 and len(set(seen)) == 35
    assert seen == sorted(seen, key=lambda kv: (kv[0], -sm.Level[kv[1]]))
    assert len(view.memories(view.query("a", limit=10_000))) == 35  # clamped to MAX_PAGE, above 35


def test_restore_puts_a_version_back_everywhere(store):
    s = store.session("a")
    s.save("k", "the blue whale is large")
    s.delete("k")
    assert s.search("whale") == []
    view = OperatorView.open(store, "RESTRICTED", "ops")
    ref = view.memories(view.query("a", status="deleted"))[0].ref
    restored = view.restore(ref)
    assert restored.key == "k" and restored.content == "the blue whale is large"
    assert [h.memory.key for h in s.search("whale")] == ["k"]
    assert s.get("k").content == "the blue whale is large"
    events = [e for e in store.audit_events() if e.operation == "restore"]
    assert len(events) == 1 and events[0].keys == ("k",) and events[0].detail == {"by": "ops"}
    with pytest.raises(NotFound):
        view.restore(ref)  # no longer deleted
    # a live version at the same level blocks a restore of an older one
    s.delete("k")
    s.save("k", "a newer whale")
    with pytest.raises(ValidationError):
        view.restore(ref)
    assert store.verify_audit() is None


def test_restore_retires_an_expired_version_in_its_place(store, clock):
    store.clock = clock
    s = store.session("a")
    s.save("k", "kept for good")
    s.delete("k")
    s.save("k", "short lived", ttl=5)
    clock.advance(10)
    view = OperatorView.open(store, "RESTRICTED", "ops")
    ref = next(r.ref for r in view.versions("a", "k") if r.memory.content == "kept for good")
    view.restore(ref)
    assert s.get("k").content == "kept for good"
    assert [(r.memory.content, r.state) for r in view.versions("a", "k")] == [
        ("kept for good", "shown"),
        ("short lived", "deleted"),
    ]


def test_restore_respects_the_clearance_and_shadowing(store):
    s = store.session("a")
    s.save("k", "public version")
    s.escalate("CONFIDENTIAL", "x")
    s.save("k", "confidential version")
    s.delete("k")
    top = OperatorView.open(store, "RESTRICTED", "ops")
    ref = top.memories(top.query("a", status="deleted"))[0].ref
    with pytest.raises(NotFound):
        OperatorView.open(store, "INTERNAL", "ops").restore(ref)
    top.restore(ref)
    assert s.get("k").content == "confidential version"  # it shadows the PUBLIC one again
    assert store.session("a").get("k").content == "public version"


def test_opening_and_reading_are_audited_without_content(store):
    _seed(store)
    view = OperatorView.open(store, "CONFIDENTIAL", "ops")
    view.memories(view.query("a"))
    events = [e for e in store.audit_events() if e.operation.startswith("console.")]
    assert [e.operation for e in events] == ["console.open", "console.memories"]
    assert all(e.taint == sm.Level.CONFIDENTIAL and e.detail["by"] == "ops" for e in events)
    assert "fact" not in repr(events)


def test_search_playground_runs_as_the_agent_with_matched_terms(store):
    _seed(store)
    view = OperatorView.open(store, "INTERNAL", "ops")
    hits = view.search("a", "coffee payroll facts")
    assert [(h.memory.key, h.memory.level.name, h.matched) for h in hits] == [
        ("k", "PUBLIC", ("coffe", "fact"))
    ]
    session = next(s for s in view.sessions("a") if s.history)
    assert session.record.taint == sm.Level.INTERNAL and session.history[0].source == "console:ops"


def test_purge_needs_restricted_and_export_pages(store):
    s = store.session("a")
    for i in range(MAX_PAGE + 30):
        s.save(f"k{i:04d}", f"note {i}")
    s.escalate("CONFIDENTIAL", "x")
    s.save("hidden", "confidential")
    internal = OperatorView.open(store, "INTERNAL", "ops")
    exported = list(internal.export("a"))
    assert len(exported) == MAX_PAGE + 30 and "hidden" not in {m.key for m in exported}
    export_event = [e for e in store.audit_events() if e.operation == "console.export"][-1]
    assert export_event.detail["count"] == MAX_PAGE + 30
    with pytest.raises(PolicyBlocked):
        internal.purge(store.now())
    s.delete("hidden")
    assert OperatorView.open(store, "RESTRICTED", "ops").purge(store.now() + timedelta(seconds=1)) == 1


# noninterference: records above the clearance never change what the console answers ------------------

ops = st.lists(
    st.tuples(st.sampled_from(["k1", "k2", "k3"]), st.sampled_from(["PUBLIC", "INTERNAL"]), st.booleans()),
    max_size=8,
)
hidden = st.lists(st.tuples(st.sampled_from(["k1", "k2", "k9"]), st.booleans()), min_size=1, max_size=5)


def _apply(store: sm.Store, visible, extra) -> None:
    for key, level, delete in visible:
        s = store.session("a")
        s.escalate(level, "x")
        s.save(key, f"{key} at {level}")
        if delete:
            s.delete(key)
    for key, delete in extra:
        s = store.session("a")
        s.escalate("CONFIDENTIAL", "hidden")
        s.save(key, f"{key} hidden")
        if delete:
            s.delete(key)


def _answers(store: sm.Store):
    view = OperatorView.open(store, "INTERNAL", "ops")
    strip = lambda records: [(r.memory.key, r.memory.level, r.memory.content, r.state) for r in records]  # noqa: E731
    return (
        [(a.agent_id, a.live, a.deleted) for a in view.agents()],
        strip(view.memories(view.query("a"))),
        strip(view.memories(view.query("a", limit=2))),
        [strip(view.versions("a", k)) for k in ("k1", "k2", "k9")],
        [(s.record.agent_id, s.record.taint, len(s.history)) for s in view.sessions("a")],
        [(h.memory.key, h.score, h.matched) for h in view.search("a", "k1 k2 k9 hidden")],
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(visible=ops, extra=hidden)
def test_records_above_the_clearance_change_nothing(visible, extra):
    plain, more = sm.open_store(":memory:", clock=FakeClock()), sm.open_store(":memory:", clock=FakeClock())
    try:
        _apply(plain, visible, [])
        _apply(more, visible, extra)
        assert _answers(plain) == _answers(more)
    finally:
        plain.close()
        more.close()


def test_the_audit_views_follow_the_one_reading_rule(store):
    _seed(store)
    low = OperatorView.open(store, "CONFIDENTIAL", "ops")
    rows = low.audit_log(limit=200)
    # operator events (no session: console reads, purge, export...) count as RESTRICTED
    assert rows and all(
        r.event.session_id is not None and r.event.taint <= sm.Level.CONFIDENTIAL for r in rows
    )
    top = OperatorView.open(store, "RESTRICTED", "ops")
    assert "console.open" in {r.event.operation for r in top.audit_log(limit=200)}
    expected = [(e.seq, e.operation) for e in store.audit_events("CONFIDENTIAL", limit=200)][::-1]
    assert [(r.seq, r.event.operation) for r in rows] == expected[: len(rows)]
    record = next(r for r in low.memories(low.query("a")) if r.memory.key == "secret")
    _, lineage = low.lineage(record.ref)
    assert [r.event.operation for r in lineage.events] == ["save"]
    page = low.audit_log(before=rows[-1].seq, limit=3)
    assert [r.seq for r in page] == [e for e, _ in expected[len(rows) : len(rows) + 3]]


def _counts(view: OperatorView, agent: str = "a") -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    found = next(a for a in view.agents() if a.agent_id == agent)
    return found.live, found.deleted, found.expired


def test_agent_counts_follow_deletes_restores_and_expiry(store, clock):
    store.clock = clock
    s = store.session("a")
    s.save("one", "first note")
    s.save("two", "second note")
    s.save("brief", "gone in ten seconds", ttl=10)
    s.escalate("CONFIDENTIAL", "payroll")
    s.save("pay", "salary bands")
    view = OperatorView.open(store, "RESTRICTED", "ops")
    assert _counts(view) == ({"PUBLIC": 3, "CONFIDENTIAL": 1}, {}, {})
    store.session("a").delete("one")
    assert _counts(view) == ({"PUBLIC": 2, "CONFIDENTIAL": 1}, {"PUBLIC": 1}, {})
    ref = next(r.ref for r in view.memories(view.query("a", status="deleted")))
    view.restore(ref)
    assert _counts(view) == ({"PUBLIC": 3, "CONFIDENTIAL": 1}, {}, {})
    clock.advance(60)
    assert _counts(view) == ({"PUBLIC": 2, "CONFIDENTIAL": 1}, {}, {"PUBLIC": 1})
    # below CONFIDENTIAL nothing of that level is counted, in any column
    assert _counts(OperatorView.open(store, "INTERNAL", "ops")) == ({"PUBLIC": 2}, {}, {"PUBLIC": 1})


def test_a_lineage_counts_the_consoles_own_reads_instead_of_listing_them(store, monkeypatch):
    s = store.session("a")
    s.save("k", "a fact")
    s.get("k")
    top = OperatorView.open(store, "RESTRICTED", "ops")
    for _ in range(4):
        top.memories(top.query("a"))  # each page names the lineage of every record it shows
    ref = top.memories(top.query("a"))[0].ref
    _, page = top.lineage(ref)
    assert [r.event.operation for r in page.events] == ["get", "save"]
    assert (page.operator_reads, page.capped) == (6, False)  # five pages and the record's own read
    _, shown = top.lineage(ref, operator_reads=True)
    ops = [r.event.operation for r in shown.events]
    assert ops[-2:] == ["get", "save"] and ops[:-2] == ["console.record"] * 2 + ["console.memories"] * 5
    assert shown.operator_reads == 7
    _, older = top.lineage(ref, before=shown.events[1].seq, limit=2, operator_reads=True)
    assert [r.seq for r in older.events] == [r.seq for r in shown.events[2:4]]
    monkeypatch.setattr(console, "MAX_COUNTED_READS", 3)
    _, capped = top.lineage(ref)
    assert ([r.event.operation for r in capped.events], capped.operator_reads, capped.capped) == (
        ["get", "save"],
        3,
        True,
    )
    # more reads than are counted before the page is full: the page is still the newest other event
    _, first = top.lineage(ref, limit=1)
    assert ([r.event.operation for r in first.events], first.operator_reads, first.capped) == (
        ["get"],
        3,
        True,
    )
    # an operator's reads count as RESTRICTED: below it they are neither listed nor counted
    low = OperatorView.open(store, "CONFIDENTIAL", "ops")
    _, below = low.lineage(ref, operator_reads=True)
    assert [r.event.operation for r in below.events] == ["get", "save"] and below.operator_reads == 0


def test_a_collapsed_lineage_is_the_full_one_filtered_whatever_the_page(store):
    """The chunked scan against the whole lineage filtered here: same page, reads counted up to its end."""
    s = store.session("a")
    s.save("k", "a fact")
    top = OperatorView.open(store, "RESTRICTED", "ops")
    # runs of the console's reads between the agent's own reads, longer than the first chunks
    for run_length in (0, 3, 1, 70, 2, 0, 9):
        for _ in range(run_length):
            top.memories(top.query("a"))
        s.get("k")
    lineage_id = s.get("k").lineage_id

    def read(**kw):
        return top._read(lambda run, d: console.lineage(run, d, top.clearance, lineage_id, **kw))

    every = read(before=None, limit=200, operator_reads=True).events
    assert len(every) == 94  # save, 8 gets, 85 console reads
    for before in (None, every[5].seq, every[40].seq, every[-3].seq):
        for limit in (1, 2, 3, 8, 50):
            older = [r for r in every if before is None or r.seq < before]
            page, reads = [], 0
            for r in older:
                if len(page) == limit:
                    break
                if r.event.operation.startswith("console."):
                    reads += 1
                else:
                    page.append(r.seq)
            got = read(before=before, limit=limit, operator_reads=False)
            assert ([r.seq for r in got.events], got.operator_reads, got.capped) == (page, reads, False)
