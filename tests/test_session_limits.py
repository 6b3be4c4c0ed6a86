"""A session's clearance and peers are fixed when it is created; only an audited operator action changes them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli
from stratamem.errors import ClearanceError
from stratamem.levels import Level


def test_resume_keeps_the_limits_it_was_created_with(store):
    created = store.session("desk", clearance=Level.INTERNAL, peers=("shared",))
    store.session("shared").save("note", "shared note")
    resumed = store.session("desk", session_id=created.id)  # no limits named: the session's own
    assert (resumed.clearance, resumed.peers) == (Level.INTERNAL, ("shared",))
    assert (
        store.session("desk", session_id=created.id, clearance="internal", peers=["shared"]).id == created.id
    )
    with pytest.raises(ClearanceError):
        resumed.escalate(Level.RESTRICTED, "would need RESTRICTED")
    assert created.get("note").content == "shared note"  # the peer is still there


@pytest.mark.parametrize(
    "clearance, peers",
    [
        (Level.RESTRICTED, None),  # wider clearance: before the fix this silently replaced INTERNAL
        (None, ()),  # dropping the peer under a process that relies on it
        (None, ("shared", "other")),  # an extra peer
        (Level.PUBLIC, None),  # narrower: refused too, rather than narrowing a shared session's limits
    ],
)
def test_resume_asking_for_other_limits_is_refused_and_changes_nothing(store, clearance, peers):
    created = store.session("desk", clearance=Level.INTERNAL, peers=("shared",))
    with pytest.raises(ClearanceError) as info:
        store.session("desk", session_id=created.id, clearance=clearance, peers=peers)
    assert info.value.code == "POLICY_BLOCKED" and "session set" in info.value.message
    assert (created.clearance, created.peers) == (Level.INTERNAL, ("shared",))


def test_operator_changes_limits_explicitly_and_audited(store):
    s = store.session("desk", clearance=Level.INTERNAL)
    s.escalate(Level.INTERNAL, "wiki")
    record = store.set_session_limits(s.id, Level.CONFIDENTIAL, ("shared",))
    assert (record.clearance, record.peers) == (Level.CONFIDENTIAL, ("shared",))
    assert (s.clearance, s.peers, s.taint) == (Level.CONFIDENTIAL, ("shared",), Level.INTERNAL)
    assert store.set_session_limits(s.id, peers=()).peers == ()
    with pytest.raises(ClearanceError):  # below the taint: reset instead
        store.set_session_limits(s.id, Level.PUBLIC)
    assert s.clearance is Level.CONFIDENTIAL
    with pytest.raises(sm.NotFound):
        store.set_session_limits("no-such-session", Level.PUBLIC)
    changes = [e for e in store.audit_events() if e.operation == "session.limits"]
    assert [e.detail["clearance"] for e in changes] == ["CONFIDENTIAL", "CONFIDENTIAL"]
    assert changes[0].detail["previous"] == {"clearance": "INTERNAL", "peers": []}
    assert all(e.session_id is None and e.taint is Level.RESTRICTED for e in changes)  # operator events
    assert not [e for e in store.audit_events(Level.CONFIDENTIAL) if e.operation == "session.limits"]
    assert store.verify_audit() is None


def test_reset_keeps_limits_and_owner(store):
    s = store.session("desk", clearance=Level.INTERNAL, peers=("shared",), owner="alice-token")
    fresh = s.reset()
    assert (fresh.clearance, fresh.peers, fresh.owner) == (Level.INTERNAL, ("shared",), "alice-token")


def test_resume_by_another_owner_is_not_found(store):
    s = store.session("desk", owner="alice-token")
    with pytest.raises(sm.NotFound):
        store.session("desk", session_id=s.id, owner="intern-token")
    assert store.session("desk", session_id=s.id).id == s.id  # the operator may


def test_cli_resume_keeps_the_mcp_sessions_clearance_and_peers(tmp_path):
    """`stratamem mcp --clearance INTERNAL --peer shared` then `stratamem --session ID --taint ...`."""
    db = str(tmp_path / "m.db")
    with sm.open_store(db) as store:
        sid = store.session("desk", clearance=Level.INTERNAL, peers=("shared",)).id
        store.session("shared").save("peer-note", "from shared")
        high = store.session("desk")
        high.escalate(Level.RESTRICTED, "secret")
        high.save("top", "restricted content")
    runner = CliRunner()
    out = runner.invoke(
        cli,
        [
            "--db",
            db,
            "--agent",
            "desk",
            "--session",
            sid,
            "--taint",
            "INTERNAL",
            "--json",
            "get",
            "peer-note",
        ],
    )
    assert out.exit_code == 0 and json.loads(out.output)["content"] == "from shared"
    refused = runner.invoke(cli, ["--db", db, "--session", sid, "--taint", "RESTRICTED", "get", "top"])
    assert refused.exit_code == 4  # before the fix: resumed at RESTRICTED and read it
    with sm.open_store(db) as store:
        record = store.backend.session_record(sid)
        assert (record.clearance, record.peers, record.taint) == (Level.INTERNAL, ("shared",), Level.INTERNAL)


def test_cli_session_set_and_show(tmp_path):
    db = str(tmp_path / "m.db")
    with sm.open_store(db) as store:
        sid = store.session("desk", clearance=Level.INTERNAL).id
    runner = CliRunner()
    shown = json.loads(runner.invoke(cli, ["--db", db, "--json", "session", "show", "--session", sid]).output)
    assert (shown["clearance"], shown["peers"], shown["owner"]) == ("INTERNAL", [], None)
    changed = runner.invoke(
        cli,
        [
            "--db",
            db,
            "--json",
            "session",
            "set",
            "--session",
            sid,
            "--clearance",
            "confidential",
            "--peer",
            "shared",
        ],
    )
    assert changed.exit_code == 0, changed.output
    assert (json.loads(changed.output)["clearance"], json.loads(changed.output)["peers"]) == (
        "CONFIDENTIAL",
        ["shared"],
    )
    assert (
        runner.invoke(cli, ["--db", db, "session", "set", "--session", sid]).exit_code == 2
    )  # nothing to do
    assert (
        runner.invoke(cli, ["--db", db, "session", "set", "--session", "nope", "--no-peers"]).exit_code == 1
    )
    cleared = runner.invoke(cli, ["--db", db, "--session", sid, "--json", "session", "set", "--no-peers"])
    assert json.loads(cleared.output)["peers"] == []
