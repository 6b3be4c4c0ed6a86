"""MCP over streamable HTTP at /mcp, driven by the official SDK's client, against the real app."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from server_support import auth, mcp_http, server, server_config, server_store  # noqa: F401

import stratamem as sm
from stratamem.tools import names

SESSION_ID = "x-stratamem-session-id"


def _bound_session(connection) -> str:
    ids = {h.get(SESSION_ID) for h in connection.response_headers if h.get("mcp-session-id")}
    assert len(ids) == 1 and None not in ids, ids
    return ids.pop()


def test_sdk_client_lists_saves_gets_searches(server):
    async def scenario() -> None:
        async with mcp_http(server.url, "alice") as mcp:
            listed = await mcp.session.list_tools()
            assert [t.name for t in listed.tools] == names("triggerfish")
            assert await mcp.call(
                "memory_save", key="trip", content="flight to Lisbon on May 3", tags=["travel"]
            ) == (False, {"saved": True, "key": "trip", "classification": "PUBLIC"})
            error, got = await mcp.call("memory_get", key="trip")
            assert not error and got["content"] == "flight to Lisbon on May 3" and got["tags"] == ["travel"]
            error, found = await mcp.call("memory_search", query="lisbon flights")
            assert not error and [r["key"] for r in found["results"]] == ["trip"]
            error, listing = await mcp.call("memory_list")
            assert [m["key"] for m in listing["memories"]] == ["trip"]
            error, refused = await mcp.call("memory_delete", key="nothing-here")
            assert error and refused["error"]["code"] == "NOT_FOUND"

    anyio.run(scenario)


def test_modern_stateless_client_works_too(server):
    """The SDK's default client negotiates the 2026-07-28 per-request protocol (no mcp-session-id)."""

    async def scenario() -> None:
        async with (
            httpx2.AsyncClient(headers=auth("alice"), timeout=30) as http,
            Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
        ):
            assert [t.name for t in (await client.list_tools()).tools] == names("triggerfish")
            saved = await client.call_tool("memory_save", {"key": "k", "content": "stateless note"})
            assert not saved.is_error and saved.structured_content["classification"] == "PUBLIC"
            got = await client.call_tool("memory_get", {"key": "k"})
            assert got.structured_content["content"] == "stateless note"

    anyio.run(scenario)


def test_runtime_escalates_the_bound_session_and_tool_arguments_cannot(server):
    async def scenario() -> None:
        async with mcp_http(server.url, "alice") as mcp:
            # the model tries to write CONFIDENTIAL by argument: stored at the live taint (PUBLIC)
            error, saved = await mcp.call(
                "memory_save",
                key="note",
                content="public words",
                classification="CONFIDENTIAL",
                level="RESTRICTED",
            )
            assert not error and saved["classification"] == "PUBLIC"

            session_id = _bound_session(mcp)
            mcp_session_id = mcp.response_headers[-1]["mcp-session-id"]
            with server.client("alice") as rest:
                looked_up = rest.get(f"/v1/mcp-sessions/{mcp_session_id}")
                assert looked_up.status_code == 200 and looked_up.json()["id"] == session_id
                escalated = rest.post(
                    f"/v1/sessions/{session_id}/escalate",
                    json={"level": "CONFIDENTIAL", "reason": "user pasted a contract"},
                )
                assert escalated.status_code == 200 and escalated.json()["taint"] == "CONFIDENTIAL"

            error, saved = await mcp.call(
                "memory_save", key="contract", content="the contract terms", classification="PUBLIC"
            )
            assert not error and saved["classification"] == "CONFIDENTIAL"

        with server.client("alice") as rest:  # the client closed (DELETE): the binding is gone
            assert rest.get(f"/v1/mcp-sessions/{mcp_session_id}").status_code == 404
            assert (
                rest.get(f"/v1/sessions/{session_id}").json()["taint"] == "CONFIDENTIAL"
            )  # the session stays

    anyio.run(scenario)
    levels = {m.key: m.level for m in server.store.export("alice")}
    assert levels == {"note": sm.Level.PUBLIC, "contract": sm.Level.CONFIDENTIAL}


def test_a_second_token_sees_nothing_of_the_first(server):
    async def scenario() -> None:
        async with mcp_http(server.url, "alice") as alice:
            await alice.call("memory_save", key="diary", content="alice's private diary entry")
            alice_session = _bound_session(alice)
            alice_mcp_session = alice.response_headers[-1]["mcp-session-id"]

        async with mcp_http(server.url, "bob") as bob:
            assert await bob.call("memory_get", key="diary") == (False, {"found": False, "key": "diary"})
            assert (await bob.call("memory_search", query="diary entry"))[1]["results"] == []
            assert (await bob.call("memory_list"))[1]["memories"] == []
            assert _bound_session(bob) != alice_session

        # bob naming alice's session explicitly is refused like a session that does not exist
        async with httpx2.AsyncClient(headers={**auth("bob"), "X-Stratamem-Session": alice_session}) as http:
            answer = await http.post(
                f"{server.url}/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Accept": "application/json, text/event-stream"},
            )
            assert answer.status_code == 404 and answer.json()["error"]["code"] == "NOT_FOUND"
        with server.client("bob") as rest:
            assert rest.get(f"/v1/mcp-sessions/{alice_mcp_session}").status_code == 404
            assert rest.get(f"/v1/sessions/{alice_session}").status_code == 404

    anyio.run(scenario)


def test_other_tokens_cannot_reuse_an_open_mcp_session(server):
    async def scenario() -> None:
        async with mcp_http(server.url, "alice") as alice:
            await alice.call("memory_save", key="secret-plan", content="alice's plan")
            mcp_session_id = alice.response_headers[-1]["mcp-session-id"]
            body = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "memory_get", "arguments": {"key": "secret-plan"}},
            }
            headers = {
                **auth("bob"),
                "mcp-session-id": mcp_session_id,
                "mcp-protocol-version": "2025-11-25",
                "Accept": "application/json, text/event-stream",
            }
            async with httpx2.AsyncClient() as http:
                hijack = await http.post(f"{server.url}/mcp", json=body, headers=headers)
            assert hijack.status_code == 404 and "alice's plan" not in hijack.text

    anyio.run(scenario)


def test_runtime_can_pin_a_rest_session_with_a_header(server):
    with server.client("alice") as rest:
        session = rest.post("/v1/sessions").json()
        rest.post(f"/v1/sessions/{session['id']}/escalate", json={"level": "INTERNAL"})

    async def scenario() -> None:
        async with mcp_http(server.url, "alice", headers={"X-Stratamem-Session": session["id"]}) as mcp:
            assert _bound_session(mcp) == session["id"]
            error, saved = await mcp.call(
                "memory_save", key="pinned", content="written in the pinned session"
            )
            assert not error and saved["classification"] == "INTERNAL"

    anyio.run(scenario)


def test_internal_token_cannot_escalate_to_confidential(server):
    async def scenario() -> None:
        async with mcp_http(server.url, "intern") as mcp:
            await mcp.call("memory_list")
            session_id = _bound_session(mcp)
            with server.client("intern") as rest:
                refused = rest.post(f"/v1/sessions/{session_id}/escalate", json={"level": "CONFIDENTIAL"})
                assert refused.status_code == 403 and refused.json()["error"]["code"] == "POLICY_BLOCKED"
                assert rest.get(f"/v1/sessions/{session_id}").json()["taint"] == "PUBLIC"
            error, saved = await mcp.call("memory_save", key="k", content="still public")
            assert not error and saved["classification"] == "PUBLIC"

    anyio.run(scenario)


def test_read_only_token_is_offered_no_writing_tools_and_refused_writes(server):
    async def scenario() -> None:
        async with mcp_http(server.url, "reader") as mcp:
            assert [t.name for t in (await mcp.session.list_tools()).tools] == names(
                "triggerfish", read_only=True
            )
            error, refused = await mcp.call("memory_save", key="k", content="v")
            assert error and refused["error"]["code"] == "POLICY_BLOCKED"

    anyio.run(scenario)


def test_unknown_tool_is_a_protocol_error(server):
    async def scenario() -> None:
        async with mcp_http(server.url, "alice") as mcp:
            with pytest.raises(MCPError):
                await mcp.session.call_tool("memory_store", {"key": "k", "content": "zeroclaw name"})

    anyio.run(scenario)


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-token-000000000"}, {"Authorization": "Basic YWxpY2U6cHc="}],
)
def test_mcp_without_a_valid_token_is_401(server, headers):
    answer = httpx2.post(
        f"{server.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize"},
        headers={**headers, "Accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "UNAUTHENTICATED"
    assert answer.headers["www-authenticate"].startswith("Bearer")
