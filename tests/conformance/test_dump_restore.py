"""Whole-store copy on one backend: ``dump`` then ``restore`` into an empty store loses nothing.

The rows that are the store's truth (sessions and taint, every memory version including soft-deleted
and expired ones, the audit chain and its head, transcripts, usage) come back row for row; the
derived indexes are rebuilt, so the copy answers every read exactly as the original.
"""

from __future__ import annotations

import pytest

from stratamem import Level, ValidationError
from stratamem.turn import CostLedger, Message, Transcript


def _fill(store):
    a = store.session("a", peers=("b",))
    a.save("plans", "public plans for the picnic", tags=["team"], category="daily")
    a.save("gone", "soon soft-deleted")
    a.delete("gone")
    a.save("brief", "expires quickly", ttl=0.001)
    store.session("b").save("peer", "a note from b about the picnic")
    high = store.session("a", clearance=Level.CONFIDENTIAL, peers=("b",))
    high.escalate(Level.CONFIDENTIAL, "payroll", source="tool:files")
    high.save("plans", "confidential plans: the merger")
    Transcript(high).append(Message("user", "what are the plans"), Message("assistant", "the merger"))
    CostLedger(high).record("model-x", 10, 5)
    store.define_compartments("FINANCE", "HR")  # HR holds bit 1: the copy must keep the numbering
    hr = store.session("a", clearance=Level.CONFIDENTIAL, peers=("b",), compartments={"HR"})
    hr.escalate(Level.CONFIDENTIAL, "a case")
    hr.enter("HR", "the case is an HR matter")
    hr.save("plans", "hr plans for the picnic: the reorganisation")
    return high, hr


def _rows(store) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for table, row in store.backend.dump():
        out.setdefault(table, []).append(row)
    return out


def _reads(store, session_id):
    s = store.session("a", session_id=session_id)
    return [
        s.taint,
        [(e.previous, e.new, e.reason, e.source) for e in s.taint_history],
        s.compartments,
        [
            (m.key, m.level, m.compartments, m.content, m.tags, m.category, m.agent_id, m.lineage_id)
            for m in s.list()
        ],
        [
            (h.memory.key, h.memory.level, h.memory.compartments, h.score)
            for h in s.search("plans picnic merger")
        ],
    ]


def test_restore_of_a_dump_is_the_same_store(make_store, clock):
    source = make_store(clock=clock)
    high, hr = _fill(source)
    before = _rows(source)
    assert source.verify_audit() is None
    target = make_store(clock=clock)  # one clock: what expired in the source has expired in the copy
    assert target.backend.restore(source.backend.dump()) == sum(
        len(rows) for table, rows in before.items() if table != "meta"
    )
    assert _rows(target) == before
    assert target.verify_audit() is None
    assert _reads(target, high.id) == _reads(source, high.id)
    assert _reads(target, hr.id) == _reads(source, hr.id)
    assert _reads(target, hr.id)[2] == {"HR"}  # the taint's compartments, by name, in the copy
    assert [m.compartments for m in target.session("a", session_id=hr.id).list() if m.key == "plans"] == [
        {"HR"}
    ]


def test_restore_refuses_a_store_that_is_not_empty(make_store):
    source = make_store()
    _fill(source)
    target = make_store()
    target.session("x").save("k", "v")
    before = _rows(target)
    with pytest.raises(ValidationError):
        target.backend.restore(source.backend.dump())
    assert _rows(target) == before
