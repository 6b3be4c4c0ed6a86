"""Tokens of the same agent are separate principals: their sessions and their audit views do not mix.

A session belongs to the principal that created it (persisted, so it holds
across restarts); another principal — operators aside — gets NOT_FOUND over
REST and MCP. ``GET /v1/audit`` shows a principal only its own sessions'
events up to its clearance, never operator actions, in bounded pages.
"""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import anyio
import httpx2
import pytest
from server_support import auth, live_server, server_store, token_digest, write_config  # noqa: F401

import stratamem as sm

EXTRA = "\n".join(
    f'[[principals]]\nname = "{name}"\ntoken_sha256 = "{token_digest(name + "-token-0123456789")}"\n'
    f'agent = "alice"\nclearance = "{clearance}"\n{lines}'
    for name, clearance, lines in [
        ("alice-peer", "CONFIDENTIAL", 'peers = ["shared"]\n'),
        ("alice-public", "PUBLIC", ""),
    ]
)


def _auth(name: str) -> dict[str, str]:
    if name in ("alice-peer", "alice-public"):
        return {"Authorization": f"Bearer {name}-token-0123456789"}
    return auth(name)


@pytest.fixture
def isolated(server_store, tmp_path):
    with live_server(server_store, write_config(tmp_path, EXTRA)) as live:
        yield live


def _client(server, who: str) -> httpx2.Client:
    return httpx2.Client(base_url=server.url, headers=_auth(who), timeout=30)


def _session(client: httpx2.Client) -> str:
    answer = client.post("/v1/sessions")
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def test_a_read_only_token_cannot_act_in_a_writers_session(isolated):
    with _client(isolated, "alice") as alice, _client(isolated, "reader") as reader:
        sid = _session(alice)
        for method, path in [("POST", "/escalate"), ("GET", ""), ("GET", "/memories"), ("POST", "/reset")]:
            answer = reader.request(method, f"/v1/sessions/{sid}{path}", json={"level": "CONFIDENTIAL"})
            assert answer.status_code == 404 and answer.json()["error"]["code"] == "NOT_FOUND", (method, path)
        assert alice.get(f"/v1/sessions/{sid}").json()["taint"] == "PUBLIC"  # not escalated by the reader


def test_a_token_without_the_peer_cannot_borrow_a_session_that_has_it(isolated):
    isolated.store.session("shared").save("shared-plan", "the shared plan")
    with _client(isolated, "alice-peer") as peer, _client(isolated, "alice") as alice:
        sid = _session(peer)
        assert peer.get(f"/v1/sessions/{sid}/memories/shared-plan").json()["found"] is True
        answer = alice.get(f"/v1/sessions/{sid}/memories/shared-plan")
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "NOT_FOUND"
        assert "shared plan" not in answer.text

    async def over_mcp() -> None:
        async with httpx2.AsyncClient(headers={**_auth("alice"), "X-Stratamem-Session": sid}) as http:
            answer = await http.post(
                f"{isolated.url}/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Accept": "application/json, text/event-stream"},
            )
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "NOT_FOUND"

    anyio.run(over_mcp)


def test_ownership_holds_across_a_restart(server_store, tmp_path):
    config = write_config(tmp_path, EXTRA)
    with live_server(server_store, config) as first, _client(first, "alice") as alice:
        sid = _session(alice)
    with (  # a new server process state, same store
        live_server(server_store, config) as second,
        _client(second, "intern") as intern,
        _client(second, "alice") as alice,
        _client(second, "ops") as ops,
    ):
        assert intern.get(f"/v1/sessions/{sid}").status_code == 404
        assert alice.get(f"/v1/sessions/{sid}").status_code == 200
        assert ops.get(f"/v1/sessions/{sid}").status_code == 404  # an operator of another agent: still not


def test_operator_sessions_need_an_operator_token(isolated):
    made_by_cli = isolated.store.session("alice", clearance=sm.Level.INTERNAL)  # e.g. `stratamem mcp`
    with _client(isolated, "alice") as alice:
        assert alice.get(f"/v1/sessions/{made_by_cli.id}").status_code == 404


def test_audit_shows_only_what_the_principal_observed(isolated):
    isolated.store.session("shared").save("shared-plan", "the shared plan")
    with (
        _client(isolated, "alice-peer") as peer,
        _client(isolated, "alice") as alice,
        _client(isolated, "alice-public") as public,
        _client(isolated, "ops") as ops,
    ):
        p = _session(peer)
        peer.get(f"/v1/sessions/{p}/memories/shared-plan")
        peer.post(f"/v1/sessions/{p}/escalate", json={"level": "CONFIDENTIAL", "reason": "payroll review"})
        a = _session(alice)
        alice.get(f"/v1/sessions/{a}/memories")
        u = _session(public)
        refused = public.post(f"/v1/sessions/{u}/escalate", json={"level": "INTERNAL", "reason": "hr case 7"})
        assert refused.status_code == 403
        list(isolated.store.export())
        isolated.store.purge(before=isolated.store.now())

        seen = alice.get("/v1/audit", params={"limit": 1000}).json()
        assert {e["session_id"] for e in seen["events"]} == {a} and seen["more"] is False
        assert "shared-plan" not in str(seen) and "payroll" not in str(seen)
        assert not [e for e in seen["events"] if e["operation"] in ("export", "purge")]
        public_seen = public.get("/v1/audit", params={"limit": 1000}).json()["events"]
        assert public_seen and all(e["taint"] == "PUBLIC" for e in public_seen)
        assert "hr case 7" not in str(public_seen)  # its refused escalation is recorded at INTERNAL
        everything = ops.get("/v1/audit", params={"limit": 1000}).json()["events"]
        assert {"export", "purge"} <= {e["operation"] for e in everything}
        assert all(e["taint"] == "RESTRICTED" for e in everything if e["operation"] in ("export", "purge"))


def test_audit_pages_are_bounded(isolated):
    with _client(isolated, "alice") as alice:
        sid = _session(alice)
        for i in range(5):
            alice.put(f"/v1/sessions/{sid}/memories/k{i}", json={"content": "v"})
        whole = alice.get("/v1/audit", params={"limit": 1000}).json()["events"]
        page = alice.get("/v1/audit", params={"limit": 2}).json()
        assert page["more"] is True and page["events"] == whole[-2:]
        back = alice.get("/v1/audit", params={"limit": 2, "before": page["next_before"]}).json()
        assert back["events"] == whole[-4:-2]
        forward = alice.get("/v1/audit", params={"limit": 4, "after": 0}).json()
        assert forward["events"] == whole[:4] and forward["next_after"] == whole[3]["seq"]
        last = alice.get("/v1/audit", params={"limit": 1000, "after": forward["next_after"]}).json()
        assert last["events"] == whole[4:] and last["more"] is False
        for bad in ({"after": "-1"}, {"before": "x"}, {"lineage": "l" * 300}):
            assert alice.get("/v1/audit", params=bad).status_code == 400


def test_restarting_stdio_mcp_on_its_session_keeps_its_limits(server_store):
    from stratamem.server.stdio import open_stdio_session, resolve_settings

    first = resolve_settings({"agent": "desk", "clearance": "INTERNAL", "peers": ("shared",)}, {}, None)
    sid = open_stdio_session(server_store, first).id
    again = open_stdio_session(server_store, resolve_settings({"agent": "desk", "session": sid}, {}, None))
    assert (again.id, again.clearance, again.peers) == (sid, sm.Level.INTERNAL, ("shared",))
    wider = resolve_settings({"agent": "desk", "session": sid}, {"STRATAMEM_CLEARANCE": "RESTRICTED"}, None)
    with pytest.raises(sm.ClearanceError):
        open_stdio_session(server_store, wider)
    assert server_store.backend.session_record(sid).clearance is sm.Level.INTERNAL
