"""The turn's records in the store: transcript and usage, on every backend, under the lattice and in the audit."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest

import stratamem as sm
from stratamem import shapes
from stratamem.migrate import migrate
from stratamem.storage.sql.transcripts import TranscriptMessage, UsageRecord
from stratamem.turn import CostLedger, Message, ToolCallRequest, Transcript, TurnSettings
from stratamem.turn.errors import LimitExceededError, ValidationError
from stratamem.turn.retention import Retention

SECRET = "the launch code is 0000-SECRET"


def test_messages_carry_the_taint_and_positions_count_only_what_is_visible(store) -> None:
    session = store.session("main")
    transcript = Transcript(session)
    transcript.append(Message("user", "hello"))
    session.escalate("CONFIDENTIAL", "read a file")
    transcript.append(Message("assistant", SECRET), Message("user", "ok"))
    rows, total = transcript.page()
    assert total == 3
    assert [(r.position, r.level) for r in rows] == [(0, "PUBLIC"), (1, "CONFIDENTIAL"), (2, "CONFIDENTIAL")]

    # reset() starts a new transcript; the old one is read only at levels the reader's taint covers
    fresh = session.reset()
    assert Transcript(fresh).page() == ([], 0)
    old, total = Transcript(fresh).page(transcript_id=session.id)
    assert total == 1 and [r.message.content for r in old] == ["hello"]
    fresh.escalate("CONFIDENTIAL", "cleared")
    assert Transcript(fresh).page(transcript_id=session.id)[1] == 3

    # another agent sees nothing, exactly as for an unknown transcript
    other = store.session("other")
    other.escalate("RESTRICTED", "x")
    assert Transcript(other).page(transcript_id=session.id) == ([], 0)
    assert Transcript(other).page(transcript_id="no-such-session") == ([], 0)


def test_transcript_and_usage_are_audited_without_content(store) -> None:
    session = store.session("main")
    Transcript(session).append(Message("user", SECRET))
    Transcript(session).page()
    CostLedger(session).record("model-x", 10, 5)
    events = store.audit_events()
    ops = [e.operation for e in events]
    assert {"transcript.append", "transcript.read", "usage.record"} <= set(ops)
    assert all(SECRET not in repr(e) for e in events)
    assert store.verify_audit() is None


def test_budget_counts_only_usage_the_taint_covers(store) -> None:
    high = store.session("main")
    high.escalate("RESTRICTED", "x")
    CostLedger(high).record("m", 1, 1, cost_usd=Decimal("5"))
    low = store.session("main")
    CostLedger(low).record("m", 1, 1, cost_usd=Decimal("1"))
    from stratamem.turn import Budget

    report = CostLedger(low).check_budget(Budget(daily_usd=Decimal(100)))
    assert report.daily_spent == Decimal(1)
    assert [r.level for r in CostLedger(low).records()] == [sm.Level.PUBLIC]
    assert sum(r.cost_usd for r in store.usage()) == Decimal(6)


def test_export_and_import_carry_transcripts_and_usage(make_store) -> None:
    source = make_store()
    session = source.session("main")
    Transcript(session).append(
        Message("user", "hi"),
        Message("assistant", "", tool_calls=(ToolCallRequest("c1", "ls", '{"a": "\\u0000"}'),)),
    )
    session.escalate("INTERNAL", "x")
    Transcript(session).append(Message("tool", "nul \x00 and é", tool_call_id="c1"))
    CostLedger(session).record("m", 3, 4, cost_usd="0.25")
    records = list(source.export_turns())
    assert [type(r) for r in records] == [TranscriptMessage] * 3 + [UsageRecord]

    target = make_store()
    assert target.import_turns(records) == 4
    again = list(target.export_turns())
    strip = lambda r: r.to_dict()  # noqa: E731 - row ids differ, the lines do not
    assert [strip(r) for r in again] == [strip(r) for r in records]
    assert [e.operation for e in target.audit_events()][-2:] == ["import.turns", "export.turns"]


def test_migrate_copies_the_turn_tables(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    with sm.open_store(src) as store:
        session = store.session("main")
        Transcript(session).append(Message("user", "remember me"))
        CostLedger(session).record("m", 1, 2, cost_usd=1)
        before = [r.to_dict() for r in store.export_turns()]
    migrate(src, dst)
    with sm.open_store(dst) as store:
        assert [r.to_dict() for r in store.export_turns()] == before
        assert store.verify_audit() is None


def test_purge_applies_retention_to_transcripts_usage_and_autosaves(tmp_path: Path, clock) -> None:
    path = tmp_path / "memory.db"
    store = sm.open_store(
        str(path), clock=clock, retention=Retention(transcript_days=7, autosave_ttl_days=7, ledger_days=30)
    )
    session = store.session("main")
    message = "Please remember that my locker combination is 31-41-59"
    turn = session.turn(message)
    turn.record_usage("m", 10, 10, cost_usd=1)
    turn.end("Noted.")
    autosaved = [m for m in session.list() if m.category == "conversation"]
    assert autosaved and autosaved[0].expires_at is not None
    clock.advance(3 * 86_400)
    assert store.purge(clock.now) == 0  # nothing is past its retention yet
    clock.advance(5 * 86_400)
    purged = store.purge(clock.now)
    assert purged == 3  # the autosaved memory and the two messages; usage is kept 30 days
    assert Transcript(session).page() == ([], 0)
    assert len(store.usage()) == 1
    store.close()
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("memory.db"))
    assert b"31-41-59" not in data


def test_bad_input_is_refused_with_stable_codes(store) -> None:
    session = store.session("main")
    transcript = Transcript(session)
    with pytest.raises(LimitExceededError) as big:
        transcript.append(Message("user", "x" * 1_000_001))
    assert big.value.code == "LIMIT_EXCEEDED"
    with pytest.raises(ValidationError):
        transcript.append(
            Message("assistant", "", tool_calls=(ToolCallRequest("a", "t"), ToolCallRequest("a", "t")))
        )
    with pytest.raises(LimitExceededError):
        transcript.append(
            Message("assistant", "", tool_calls=tuple(ToolCallRequest(f"c{i}", "t") for i in range(65)))
        )
    for start, limit in [(-1, 10), (0, 0), ("0", 5), (0, True)]:
        with pytest.raises(ValidationError):
            transcript.page(start, limit)  # type: ignore[arg-type]
    assert transcript.page() == ([], 0)  # nothing was written
    with pytest.raises(sm.ValidationError):
        Retention(transcript_days=float("nan"))
    with pytest.raises(sm.ValidationError):
        TurnSettings(history_window=0)


def test_lone_surrogates_are_stored_replaced(store) -> None:
    session = store.session("main")
    Transcript(session).append(Message("user", "a\ud800b"))
    (row,), _ = Transcript(session).page()
    assert row.message.content == "a\ufffdb"


def test_a_long_transcript_is_read_in_bounded_pages(store) -> None:
    session = store.session("main")
    transcript = Transcript(session)
    batch = [Message("user", f"m{i}") for i in range(1500)]
    transcript.append(*batch)
    rows, total = transcript.page(0, 5000)
    assert total == 1500 and len(rows) == 1000  # one page is bounded
    offset, tail = transcript.tail(10)
    assert offset == 1490 and [m.content for m in tail] == [f"m{i}" for i in range(1490, 1500)]
    assert timedelta  # keep the import for readers of the retention test


def test_a_transcript_the_caller_may_not_name_reads_as_an_unknown_one(store) -> None:
    """``named=False`` (a server's principal does not own that session): the same page and audit event."""
    writer = store.session("main")
    Transcript(writer).append(Message("user", SECRET))
    reader = store.session("main")

    def read(transcript_id: str, *, named: bool = True) -> tuple:
        page = Transcript(reader).page(0, 10, transcript_id, named=named)
        event = shapes.audit_event(store.audit_events()[-1])
        return page, {k: v for k, v in event.items() if k not in ("seq", "time", "hash")}

    assert Transcript(reader).page(0, 10, writer.id)[1] == 1  # the same agent may name it
    unnamed = read(writer.id, named=False)
    assert unnamed == read("no-such-session")
    assert unnamed[0] == ([], 0) and unnamed[1]["operation"] == "transcript.read"
