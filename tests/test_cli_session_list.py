"""``stratamem session list``: the console's session view on the command line, bounded, paged, audited."""

import json

import pytest
from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli
from stratamem.storage.records import ONE_SHOT_PREFIX


@pytest.fixture
def run(tmp_path):
    db = str(tmp_path / "cli.db")
    sm.Store(db).close()
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(cli, ["--db", db, *args], catch_exceptions=False)

    invoke.db = db
    return invoke


def _ids(result) -> list[str]:
    assert result.exit_code == 0, result.output
    return [s["id"] for s in json.loads(result.output)["sessions"]]


def test_one_shot_sessions_are_hidden_unless_all(run):
    assert run("--session", "work", "save", "k", "v").exit_code == 0
    assert run("save", "k2", "v2").exit_code == 0  # a one-shot session of its own
    assert _ids(run("--json", "session", "list")) == ["work"]
    listed = json.loads(run("--json", "session", "list", "--all").output)["sessions"]
    assert [s["one_shot"] for s in listed] == [True, False]
    assert listed[0]["id"].startswith(ONE_SHOT_PREFIX) and listed[1]["id"] == "work"
    assert {"agent_id", "taint", "clearance", "created_at", "taint_history"} <= set(listed[1])
    plain = run("session", "list", "--all")
    assert plain.exit_code == 0
    lines = plain.output.splitlines()
    assert len(lines) == 2 and lines[0].endswith(" one-shot") and " work " in lines[1]


def test_paged_filtered_by_agent_and_within_the_clearance(run):
    with sm.Store(run.db) as store:
        for i in range(3):
            store.session("alice", session_id=f"a{i}")
        store.session("bob", session_id="b0")
        store.session("bob", session_id="secret").escalate("RESTRICTED", "test")
    first = json.loads(run("--json", "session", "list", "--agent", "alice", "--limit", "2").output)
    assert len(first["sessions"]) == 2 and first["next"]
    rest = run("--json", "session", "list", "--agent", "alice", "--limit", "2", "--after", first["next"])
    assert sorted(s["id"] for s in first["sessions"]) + _ids(rest) == ["a1", "a2", "a0"]
    assert _ids(run("--json", "--agent", "bob", "session", "list")) == ["secret", "b0"]
    assert _ids(run("--json", "session", "list", "--agent", "bob", "--clearance", "CONFIDENTIAL")) == ["b0"]
    with sm.Store(run.db) as store:
        reads = [e for e in store.audit_events() if e.operation == "console.sessions"]
    assert len(reads) == 4 and {e.detail["by"] for e in reads} == {"cli"}


@pytest.mark.parametrize(
    "args",
    [
        ("--limit", "0"),
        ("--limit", "201"),
        ("--after", "not-a-cursor"),
        ("--clearance", "TOP"),
        ("--agent", ""),
    ],
)
def test_bad_input_is_a_clear_error(run, args):
    result = run("--json", "session", "list", *args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    if args[0] != "--limit":  # the range is click's usage error; the rest are the contract's error shape
        assert json.loads(result.output)["error"]["code"] == "VALIDATION_ERROR"


def test_a_missing_store_is_refused_not_created(tmp_path):
    db = tmp_path / "absent.db"
    result = CliRunner().invoke(cli, ["--db", str(db), "session", "list"])
    assert result.exit_code != 0 and "no store at" in result.output
    assert not db.exists()
