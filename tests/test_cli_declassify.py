"""``stratamem declassify``: the act, the two-person rule's approve/deny, the register, and exit codes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "cli.db")
    with sm.Store(path) as store:
        store.define_compartments("HR")
        hr = store.session("main", clearance="CONFIDENTIAL+HR")
        hr.enter("HR", "payroll")
        hr.escalate("CONFIDENTIAL", "payroll")
        hr.save("salary", "Alice earns 90k")
    return path


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "server.toml"
    path.write_text("[declassify]\nrequire_approval = true\nrequest_hours = 2\n", "utf-8")
    return str(path)


def invoke(db, *args):
    return CliRunner().invoke(cli, ["--db", db, *args], catch_exceptions=False)


def ask(db, *extra, reason="report"):
    """``declassify main salary`` from CONFIDENTIAL+HR to PUBLIC with ``extra`` options."""
    args = ["--from", "CONFIDENTIAL+HR", "--to", "PUBLIC", "--reason", reason, *extra]
    return invoke(db, "declassify", "main", "salary", *args)


def public_content(db):
    with sm.Store(db) as store:
        found = store.session("main").get("salary")
        return None if found is None else found.content


def test_declassify_writes_the_lower_version(db):
    result = ask(db, "--as", "ops-1", "--json", reason="published")
    assert result.exit_code == 0, result.output
    shape = json.loads(result.output)
    assert shape["status"] == "done" and shape["from"] == "CONFIDENTIAL+HR" and shape["to"] == "PUBLIC"
    assert public_content(db) == "Alice earns 90k"
    listed = json.loads(invoke(db, "declassify", "list", "--json").output)
    assert [d["id"] for d in listed["declassifications"]] == [shape["id"]]


def test_a_replacement_file_is_written_instead(db, tmp_path):
    redacted = tmp_path / "redacted.txt"
    redacted.write_text("Alice's pay: [redacted]", "utf-8")
    result = ask(db, "--replacement-file", str(redacted), reason="redacted")
    assert result.exit_code == 0, result.output
    assert "done" in result.output and public_content(db) == "Alice's pay: [redacted]"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--from", "CONFIDENTIAL+HR", "--to", "RESTRICTED"], 2),  # not lower
        (["--from", "CONFIDENTIAL+NOPE", "--to", "PUBLIC"], 2),  # unknown compartment
        (["--from", "CONFIDENTIAL", "--to", "PUBLIC"], 1),  # not live at that label
        (["--from", "CONFIDENTIAL+HR", "--to", "PUBLIC", "--approver", "operator"], 4),  # same person
    ],
)
def test_refusals_exit_with_the_contracts_codes(db, args, code):
    result = invoke(db, "declassify", "main", "salary", *args, "--reason", "why", "--json")
    assert result.exit_code == code, result.output
    assert json.loads(result.output)["error"]["code"]
    assert public_content(db) is None


def test_the_two_person_rule_from_the_config(db, config):
    asked = ask(db, "--as", "ops-1", "--config", config, "--json")
    assert asked.exit_code == 0, asked.output
    request = json.loads(asked.output)
    assert request["status"] == "pending" and public_content(db) is None
    pending = json.loads(invoke(db, "declassify", "list", "--pending", "--json").output)
    assert [d["id"] for d in pending["declassifications"]] == [request["id"]]
    same = invoke(db, "declassify", "approve", str(request["id"]), "--as", "ops-1")
    assert same.exit_code == 4 and public_content(db) is None
    done = invoke(db, "declassify", "approve", str(request["id"]), "--as", "ops-2")
    assert done.exit_code == 0 and "approved by ops-2" in done.output
    assert public_content(db) == "Alice earns 90k"
    again = invoke(db, "declassify", "approve", str(request["id"]), "--as", "ops-3")
    assert again.exit_code == 2 and "stale approval" in again.output
    assert invoke(db, "declassify", "approve", "999", "--as", "ops-3").exit_code == 1


def test_deny_refuses_a_request(db, config):
    asked = ask(db, "--config", config, "--json")
    request_id = str(json.loads(asked.output)["id"])
    assert invoke(db, "declassify", "deny", request_id, "--as", "ops-2").exit_code == 0
    assert invoke(db, "declassify", "approve", request_id, "--as", "ops-2").exit_code == 2
    assert public_content(db) is None
