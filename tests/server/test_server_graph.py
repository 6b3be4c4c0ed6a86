"""The graph served: ``stratamem mcp --profile mcp-memory`` over stdio, MCP over HTTP, and REST."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from server_support import cli_env, server, server_config, server_store  # noqa: F401

import stratamem as sm
from stratamem.tools import names

ENTITY = {"name": "Sam", "entityType": "person", "observations": ["likes tea"]}


def test_stdio_mcp_memory_profile_is_a_drop_in(tmp_path):
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "stratamem",
            "--db",
            str(tmp_path / "memory.db"),
            "mcp",
            "--profile",
            "mcp-memory",
            "--agent",
            "alice",
            "--taint",
            "INTERNAL",
        ],
        env=cli_env(tmp_path),
    )

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert [t.name for t in (await session.list_tools()).tools] == names("mcp-memory")
            result = await session.call_tool(
                "create_entities",
                {"entities": [ENTITY, {"name": "Billing", "entityType": "team", "observations": []}]},
            )
            assert not result.is_error and json.loads(result.content[0].text)[0] == ENTITY
            assert result.structured_content == {"entities": json.loads(result.content[0].text)}
            result = await session.call_tool(
                "create_relations",
                {"relations": [{"from": "Sam", "to": "Billing", "relationType": "manages"}]},
            )
            assert result.structured_content["relations"][0]["relationType"] == "manages"
            result = await session.call_tool("delete_entities", {"entityNames": ["Nobody"]})
            assert result.content[0].text == "Entities deleted successfully"
            assert result.structured_content == {"success": True, "message": "Entities deleted successfully"}
            result = await session.call_tool("search_nodes", {"query": "tea"})
            assert [e["name"] for e in result.structured_content["entities"]] == ["Sam"]
            result = await session.call_tool(
                "add_observations", {"observations": [{"entityName": "Ghost", "contents": ["x"]}]}
            )
            assert result.is_error and json.loads(result.content[0].text)["error"]["code"] == "NOT_FOUND"

    anyio.run(scenario)
    with sm.open_store(str(tmp_path / "memory.db")) as store:
        s = store.session("alice")
        s.escalate("INTERNAL", "check")
        assert s.graph.get("Sam").level == sm.Level.INTERNAL


def test_rest_graph_route_answers_the_structured_shape(server):
    with server.client("alice") as rest:
        sid = rest.post("/v1/sessions").json()["id"]
        made = rest.post(f"/v1/sessions/{sid}/graph/create_entities", json={"entities": [ENTITY]})
        assert made.status_code == 200 and made.json() == {"entities": [ENTITY]}
        read = rest.post(f"/v1/sessions/{sid}/graph/read_graph", json={})
        assert read.json() == {"entities": [ENTITY], "relations": []}
        gone = rest.post(
            f"/v1/sessions/{sid}/graph/add_observations",
            json={"observations": [{"entityName": "Ghost", "contents": ["x"]}]},
        )
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "NOT_FOUND"
        bad = rest.post(f"/v1/sessions/{sid}/graph/create_entities", json={"entities": "x"})
        assert bad.status_code == 400
        assert rest.post(f"/v1/sessions/{sid}/graph/memory_save", json={}).status_code == 404
        deleted = rest.post(f"/v1/sessions/{sid}/graph/delete_entities", json={"entityNames": ["Sam"]})
        assert deleted.json() == {"success": True, "message": "Entities deleted successfully"}
