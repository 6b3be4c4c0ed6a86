"""The turn API over MCP (streamable HTTP at /mcp-turns): same operations and answers as REST."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import contextlib
import json

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from server_support import auth, server, server_config, server_store  # noqa: F401


@contextlib.asynccontextmanager
async def turn_client(url: str, who: str):
    async with (
        httpx2.AsyncClient(headers=auth(who), timeout=30) as http,
        streamable_http_client(f"{url}/mcp-turns", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, **arguments) -> tuple[bool, dict]:
    result = await session.call_tool(name, arguments)
    return bool(result.is_error), json.loads(result.content[0].text)


def test_a_whole_turn_over_mcp(server):
    with server.client("alice") as rest:
        sid = rest.post("/v1/sessions").json()["id"]
        rest.post(f"/v1/sessions/{sid}/memories", json={"key": "city", "content": "Alice lives in Lisbon"})

    async def scenario() -> None:
        async with turn_client(server.url, "alice") as mcp:
            names = {t.name for t in (await mcp.list_tools()).tools}
            assert {"turn_begin", "turn_tool_result", "turn_usage", "turn_end", "transcript"} <= names
            error, begun = await call(
                mcp, "turn_begin", session_id=sid, user_message="where does Alice live?"
            )
            assert not error and begun["messages"][-1]["content"].startswith("[Memory context]\n- city:")
            tid = begun["turn_id"]
            error, _ = await call(
                mcp,
                "turn_tool_calls",
                session_id=sid,
                turn_id=tid,
                tool_calls=[{"id": "c1", "name": "maps", "arguments": "{}"}],
            )
            assert not error
            error, result = await call(
                mcp,
                "turn_tool_result",
                session_id=sid,
                turn_id=tid,
                call_id="c1",
                tool_name="maps",
                output="Lisbon, Portugal",
            )
            assert not error and result["message"]["role"] == "tool"
            error, usage = await call(
                mcp, "turn_usage", session_id=sid, turn_id=tid, model="m", input_tokens=5, output_tokens=5
            )
            assert not error and usage["usage"]["model"] == "m"
            assert (await call(mcp, "turn_end", session_id=sid, turn_id=tid, content="Lisbon."))[0] is False
            error, again = await call(mcp, "turn_end", session_id=sid, turn_id=tid, content="twice")
            assert error and again["error"]["code"] == "TURN_STATE"
            error, page = await call(mcp, "transcript", session_id=sid)
            assert not error and page["total"] == 4
        async with turn_client(server.url, "bob") as other:
            error, answer = await call(other, "transcript", session_id=sid)
            assert error and answer["error"]["code"] == "NOT_FOUND"

    anyio.run(scenario)
