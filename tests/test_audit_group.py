"""Concurrent audit appends share a transaction (``storage/audit_group``) and the chain stays linear.

A server's worker threads each append several events per tool call; they used to take turns, one
transaction (and on PostgreSQL one WAL flush) per event. Grouped, every caller still gets its own
event back only once it is committed, in one linear chain.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import stratamem as sm
from stratamem.audit import AuditDraft
from stratamem.storage import audit_store
from stratamem.storage.sql.audit_group import GroupAppender

THREADS, EACH = 8, 15
LIVENESS_S = 60


def test_concurrent_appends_and_searches_keep_one_verified_chain(store):
    s = store.session("a")
    s.save("k", "harbour lights")
    before = audit_store.tip(store.backend)[0]
    got: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def work(n: int) -> None:
        try:
            start.wait(LIVENESS_S)
            session = sm.Session(store, s.id)
            for i in range(EACH):
                event = store.audit(
                    AuditDraft("policy.decision", s.id, "a", sm.Level.PUBLIC, detail={"n": n, "i": i})
                )
                assert [h.memory.key for h in session.search("harbour")] == ["k"]
                with lock:
                    got.append(event.seq)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LIVENESS_S)
    assert not errors, errors[0]
    assert len(set(got)) == THREADS * EACH  # every caller got its own committed event
    assert store.verify_audit() is None
    assert audit_store.tip(store.backend)[0] == before + 2 * THREADS * EACH  # its event and each search's
    events = store.audit_events(limit=10_000)
    mine = [e for e in events if e.operation == "policy.decision"]
    assert sorted((e.detail["n"], e.detail["i"]) for e in mine) == [
        (n, i) for n in range(THREADS) for i in range(EACH)
    ]


def _draft(i: int) -> AuditDraft:
    return AuditDraft("x", detail={"i": i})


def test_a_failed_group_fails_only_the_callers_whose_own_event_cannot_be_written():
    """Callers queued behind a failing transaction are written alone; only the culprit gets the error."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    entered, release = threading.Event(), threading.Event()
    calls: list[list[int]] = []

    def event(seq: int) -> sm.models.AuditEvent:
        return sm.models.AuditEvent(seq, now, None, None, sm.Level.PUBLIC, "x", (), (), (), "ok", {}, "", "")

    def write(items):
        ids = [d.detail["i"] for d, _ in items]
        calls.append(ids)
        if len(calls) == 1:  # the first leader holds the turn while others queue
            entered.set()
            release.wait(LIVENESS_S)
            return [event(1)]
        if 2 in ids:  # event 2 cannot be written, in a group or alone
            raise sm.errors.StorageError("cannot write this event (simulated)")
        return [event(10 + i) for i in ids]

    group = GroupAppender(write)
    results: dict[int, object] = {}

    def call(i: int) -> None:
        try:
            results[i] = group.append(_draft(i), now).seq
        except sm.errors.StorageError as exc:
            results[i] = str(exc)

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert entered.wait(LIVENESS_S)
    queued = [threading.Thread(target=call, args=(i,)) for i in (1, 2, 3)]
    for t in queued:
        t.start()
    while len(group._queue) < 3:  # all three wait behind the leader
        threading.Event().wait(0.01)
    release.set()
    for t in [first, *queued]:
        t.join(LIVENESS_S)
    assert results[0] == 1 and calls[0] == [0]
    assert sorted(calls[1]) == [1, 2, 3]  # the group's transaction failed, then each was tried alone
    assert sorted(map(tuple, calls[2:])) == [(1,), (2,), (3,)]
    assert results[1] == 11 and results[3] == 13
    assert results[2] == "cannot write this event (simulated)"
    assert group.append(_draft(4), now).seq == 14  # the appender carries on
