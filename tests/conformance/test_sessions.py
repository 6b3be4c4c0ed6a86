"""Sessions and taint: escalation upwards only within the clearance, reset, resume, live taint."""

import pytest

import stratamem as sm
from stratamem import ClearanceError, Level


def test_new_session_starts_public_and_escalates_upwards_only(store):
    s = store.session("main")
    assert s.taint is Level.PUBLIC
    assert s.escalate(Level.CONFIDENTIAL, "read a contract", source="tool:files") is Level.CONFIDENTIAL
    assert s.escalate("internal", "lower asks are ignored") is Level.CONFIDENTIAL
    history = s.taint_history
    assert [(e.previous, e.new, e.reason, e.source) for e in history] == [
        (Level.PUBLIC, Level.CONFIDENTIAL, "read a contract", "tool:files")
    ]
    assert history[0].time.tzinfo is not None


def test_escalation_above_clearance_refused_and_changes_nothing(store):
    s = store.session("main", clearance=Level.INTERNAL)
    with pytest.raises(ClearanceError) as err:
        s.escalate(Level.CONFIDENTIAL, "too high")
    assert err.value.code == "POLICY_BLOCKED"
    assert s.taint is Level.PUBLIC
    assert s.taint_history == []


def test_reset_is_a_new_session_at_public(store):
    s = store.session("main", peers=("helper",), clearance=Level.CONFIDENTIAL)
    s.escalate(Level.CONFIDENTIAL, "x")
    fresh = s.reset()
    assert fresh.id != s.id and fresh.taint is Level.PUBLIC
    assert fresh.agent_id == "main" and fresh.peers == ("helper",) and fresh.clearance is Level.CONFIDENTIAL
    assert s.taint is Level.CONFIDENTIAL


def test_taint_is_read_live_across_handles(store):
    s = store.session("main")
    same = store.session("main", session_id=s.id)
    s.escalate(Level.RESTRICTED, "x")
    assert same.taint is Level.RESTRICTED
    same.save("k", "v")
    assert s.get("k").level is Level.RESTRICTED


def test_resume_checks_agent_and_clearance(store):
    s = store.session("main")
    s.escalate(Level.CONFIDENTIAL, "x")
    with pytest.raises(sm.ValidationError):
        store.session("other", session_id=s.id)
    with pytest.raises(ClearanceError):
        store.session("main", session_id=s.id, clearance=Level.INTERNAL)
