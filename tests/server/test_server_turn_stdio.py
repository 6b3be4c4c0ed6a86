"""`stratamem mcp --turns`: the turn tools of /mcp-turns over stdio, driven by the official SDK's client."""

from __future__ import annotations

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from server_support import cli_env

import stratamem as sm
from stratamem.server.mcp_turns import TOOLS
from stratamem.tools import names


def _params(tmp_path, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "stratamem", "--db", str(tmp_path / "memory.db"), "mcp", *args],
        env=env or cli_env(tmp_path),
    )


async def call(session: ClientSession, name: str, **arguments) -> tuple[bool, dict]:
    result = await session.call_tool(name, arguments)
    return bool(result.is_error), json.loads(result.content[0].text)


def test_a_whole_turn_over_stdio_mcp(tmp_path):
    config = tmp_path / "stratamem.toml"
    config.write_text(
        '[turns]\ndaily_budget_usd = 0.7\n[turns.prices."m"]\ninput = 1000\noutput = 2000\n',
        encoding="utf-8",
    )
    with sm.open_store(str(tmp_path / "memory.db")) as store:
        store.session("alice", "conv-1").save("city", "Alice lives in Lisbon")
    params = _params(tmp_path, "--agent", "alice", "--session", "conv-1", "--turns", "--config", str(config))

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            listed = {t.name: t for t in (await mcp.list_tools()).tools}
            assert {t["name"] for t in TOOLS} | set(names("triggerfish")) == set(listed)
            assert "session_id" not in listed["turn_begin"].input_schema["required"]

            error, begun = await call(mcp, "turn_begin", user_message="where does Alice live?")
            assert not error and begun["messages"][-1]["content"].startswith("[Memory context]\n- city:")
            tid = begun["turn_id"]
            calls = [{"id": "c1", "name": "memory_search", "arguments": '{"query": "Alice"}'}]
            assert not (await call(mcp, "turn_tool_calls", turn_id=tid, tool_calls=calls))[0]
            # the model's tool, run on the same stdio session, and its result recorded in the turn
            error, found = await call(mcp, "memory_search", query="Alice")
            assert not error and "city" in [r["key"] for r in found["results"]]
            error, result = await call(
                mcp,
                "turn_tool_result",
                turn_id=tid,
                call_id="c1",
                tool_name="memory_search",
                output=json.dumps(found),
            )
            assert not error and result["pending_tool_calls"] == []
            error, usage = await call(
                mcp, "turn_usage", turn_id=tid, model="m", input_tokens=400, output_tokens=100
            )
            # the config file's price (1000/2000 USD per million) and daily budget (0.7 USD)
            assert not error and usage["usage"]["cost_usd"] == "0.6"
            assert usage["budget"]["status"] == "warning" and usage["budget"]["daily_limit_usd"] == "0.7"
            assert not (await call(mcp, "turn_end", turn_id=tid, content="In Lisbon."))[0]
            error, again = await call(mcp, "turn_end", turn_id=tid, content="twice")
            assert error and again["error"]["code"] == "TURN_STATE"
            error, page = await call(mcp, "transcript")
            assert not error and page["total"] == 4
            assert [m["role"] for m in page["messages"]] == ["user", "assistant", "tool", "assistant"]
            # another session's id is NOT_FOUND, as another principal's over HTTP
            error, other = await call(mcp, "transcript", session_id="conv-2")
            assert error and other["error"]["code"] == "NOT_FOUND"

    anyio.run(scenario)


def test_turn_tools_are_off_unless_asked_for(tmp_path):
    async def scenario() -> None:
        async with stdio_client(_params(tmp_path)) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            assert [t.name for t in (await mcp.list_tools()).tools] == names("triggerfish")

    anyio.run(scenario)
