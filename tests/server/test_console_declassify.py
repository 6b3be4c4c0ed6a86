"""Declassification in the operator console: operator-only, at RESTRICTED, the signed-in operator as the actor,
and the two-person rule between two sign-ins. An agent's token never reaches it."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

from collections.abc import Iterator

import pytest
from server_support import auth, config_text, live_server, server, server_config, server_store  # noqa: F401

import stratamem as sm
from stratamem.server.principals import token_digest

OPS2_TOKEN = "ops2-token-0123456789a"
ORDER = {"agent": "alice", "key": "deal", "from": "CONFIDENTIAL", "to": "PUBLIC", "reason": "announced"}


def _open(client, headers: dict[str, str], clearance: str = "RESTRICTED") -> dict[str, str]:
    answer = client.post("/v1/console/open", json={"clearance": clearance}, headers=headers)
    assert answer.status_code == 201, answer.text
    return {**headers, "X-Stratamem-Console": answer.json()["console"]}


def _seed(store: sm.Store) -> None:
    s = store.session("alice")
    s.escalate("CONFIDENTIAL", "contract")
    s.save("deal", "price is 1.2M")


def _public(store: sm.Store) -> str | None:
    found = store.session("alice").get("deal")
    return None if found is None else found.content


def test_an_operator_declassifies_and_the_register_lists_it(server):
    _seed(server.store)
    with server.client() as c:
        headers = _open(c, auth("ops"))
        refused = c.post("/v1/console/declassify", json=ORDER, headers=headers)
        assert refused.status_code == 400  # no {"confirm": true}
        done = c.post("/v1/console/declassify", json={**ORDER, "confirm": True}, headers=headers)
        assert done.status_code == 201, done.text
        assert done.json()["status"] == "done" and done.json()["actor"] == "ops"
        assert _public(server.store) == "price is 1.2M"
        listed = c.get("/v1/console/declassify", headers=headers).json()
        assert [d["id"] for d in listed["declassifications"]] == [done.json()["id"]]
        bad = c.post(
            "/v1/console/declassify", json={**ORDER, "to": "RESTRICTED", "confirm": True}, headers=headers
        )
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "VALIDATION_ERROR"


def test_an_agent_token_cannot_declassify_or_list(server):
    _seed(server.store)
    with server.client() as c:
        operator = _open(c, auth("ops"))
        for who in ("alice", "bob"):
            as_agent = {**operator, **auth(who)}
            answer = c.post("/v1/console/declassify", json={**ORDER, "confirm": True}, headers=as_agent)
            assert answer.status_code == 403 and answer.json()["error"]["code"] == "POLICY_BLOCKED"
            assert c.get("/v1/console/declassify", headers=as_agent).status_code == 403
            assert (
                c.post(
                    "/v1/console/declassify/1/approve", json={"confirm": True}, headers=as_agent
                ).status_code
                == 403
            )
        no_console = c.post("/v1/console/declassify", json={**ORDER, "confirm": True}, headers=auth("ops"))
        assert no_console.status_code == 401
        assert c.post("/v1/console/declassify", json={**ORDER, "confirm": True}).status_code == 401
        # the agent REST routes know nothing of it
        assert c.post("/v1/declassify", json=ORDER, headers=auth("alice")).status_code in (404, 405)
    assert _public(server.store) is None
    assert not [e for e in server.store.audit_events() if e.operation == "declassify"]


def test_a_console_below_restricted_is_refused(server):
    _seed(server.store)
    with server.client() as c:
        headers = _open(c, auth("ops"), clearance="CONFIDENTIAL")
        answer = c.post("/v1/console/declassify", json={**ORDER, "confirm": True}, headers=headers)
        assert answer.status_code == 403 and "RESTRICTED" in answer.json()["error"]["message"]
        assert c.get("/v1/console/declassify", headers=headers).status_code == 403
    assert _public(server.store) is None


def test_an_inline_approver_is_not_taken_over_http(server):
    _seed(server.store)
    with server.client() as c:
        headers = _open(c, auth("ops"))
        body = {**ORDER, "approver": "someone", "confirm": True}
        answer = c.post("/v1/console/declassify", json=body, headers=headers)
        assert answer.status_code == 400 and "approve" in answer.json()["error"]["message"]
    assert _public(server.store) is None


@pytest.fixture
def two_operators(tmp_path) -> Iterator:
    extra = (
        f'[[principals]]\nname = "ops2"\ntoken_sha256 = "{token_digest(OPS2_TOKEN)}"\nagent = "ops"\n'
        'clearance = "RESTRICTED"\noperator = true\n'
    )
    path = tmp_path / "server.toml"
    path.write_text(config_text(extra), encoding="utf-8")
    store = sm.open_store(str(tmp_path / "memory.db"), require_approval=True)
    try:
        with live_server(store, path) as live:
            yield live
    finally:
        store.close()


def test_the_two_person_rule_needs_a_second_sign_in(two_operators):
    live = two_operators
    _seed(live.store)
    with live.client() as c:
        first = _open(c, auth("ops"))
        second = _open(c, {"Authorization": f"Bearer {OPS2_TOKEN}"})
        asked = c.post("/v1/console/declassify", json={**ORDER, "confirm": True}, headers=first)
        assert asked.status_code == 201 and asked.json()["status"] == "pending"
        request_id = asked.json()["id"]
        pending = c.get("/v1/console/declassify", params={"status": "pending"}, headers=second).json()
        assert [d["id"] for d in pending["declassifications"]] == [request_id]
        same = c.post(f"/v1/console/declassify/{request_id}/approve", json={"confirm": True}, headers=first)
        assert same.status_code == 403 and same.json()["error"]["code"] == "POLICY_BLOCKED"
        assert _public(live.store) is None
        done = c.post(f"/v1/console/declassify/{request_id}/approve", json={"confirm": True}, headers=second)
        assert done.status_code == 200 and done.json()["approver"] == "ops2"
        assert _public(live.store) == "price is 1.2M"
        stale = c.post(f"/v1/console/declassify/{request_id}/approve", json={"confirm": True}, headers=second)
        assert stale.status_code == 400 and "stale approval" in stale.json()["error"]["message"]
        unknown = c.post("/v1/console/declassify/999/approve", json={"confirm": True}, headers=second)
        assert unknown.status_code == 404
