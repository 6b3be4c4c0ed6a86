"""Read-only sessions: writing tools are refused (POLICY_BLOCKED) and nothing changes."""

from __future__ import annotations

import json

import pytest
from tools_support import new_store

from stratamem.policy import Policy
from stratamem.tools import execute

READ_ONLY = Policy(read_only=True)
WRITES = [
    ("memory_save", {"key": "new", "content": "x"}),
    ("memory_delete", {"key": "kept"}),
    ("memory_store", {"key": "new", "content": "x"}),
    ("memory_forget", {"key": "kept"}),
    ("memory_purge", {"session_id": "writer"}),
]


@pytest.fixture
def session():
    with new_store() as store:
        writer = store.session(session_id="writer")
        writer.save("kept", "still here")
        yield store.session()


@pytest.mark.parametrize(("name", "arguments"), WRITES)
def test_writing_tools_are_refused(session, name, arguments):
    before = session.list()
    data = json.loads(execute(session, name, arguments, policy=READ_ONLY))
    assert data["error"]["code"] == "POLICY_BLOCKED"
    assert "read-only" in data["error"]["message"]
    assert session.list() == before


@pytest.mark.parametrize(("name", "arguments"), WRITES)
def test_refused_even_with_bad_arguments(session, name, arguments):
    data = json.loads(execute(session, name, {"key": 5}, policy=READ_ONLY))
    assert data["error"]["code"] == "POLICY_BLOCKED"


def test_reads_still_work(session):
    assert json.loads(execute(session, "memory_get", {"key": "kept"}, policy=READ_ONLY))["found"] is True
    assert execute(session, "memory_recall", {"query": "still"}, policy=READ_ONLY).startswith("Found 1")


def test_refusal_is_audited_as_a_policy_decision(session):
    execute(session, "memory_save", {"key": "a", "content": "b"}, policy=READ_ONLY)
    decision = [e for e in session.store.audit_events() if e.operation == "policy.decision"][-1]
    assert decision.outcome == "blocked"
    assert decision.detail["rule_id"] == "read_only" and decision.detail["hook"] == "PRE_TOOL_CALL"
