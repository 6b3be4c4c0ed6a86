"""The ``mcp-memory`` profile over MCP streamable HTTP (``/mcp``), driven by the official SDK's client.

A client configured for the official MCP memory server works against ``stratamem serve`` with
``profile = "mcp-memory"``: the nine tools, their answers and structured content, and a ``read_graph``
that answers one bounded page at a time.
"""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import json

import anyio
import pytest
from server_support import live_server, mcp_http, server_store, write_config  # noqa: F401

from stratamem import Level
from stratamem.graph.api import PAGE_NODES
from stratamem.tools import names
from stratamem.tools.instructions import instructions


@pytest.fixture
def graph_server(server_store, tmp_path):
    with live_server(server_store, write_config(tmp_path, '[server]\nprofile = "mcp-memory"\n')) as live:
        yield live


def entity(name: str, *observations: str) -> dict:
    return {"name": name, "entityType": "person", "observations": list(observations)}


def test_create_read_search_open_delete_round_trip(graph_server):
    async def scenario() -> None:
        async with mcp_http(graph_server.url, "alice") as mcp:
            listed = await mcp.session.list_tools()
            assert [t.name for t in listed.tools] == names("mcp-memory")
            # the instructions name the graph's tools, not memory_save
            assert mcp.session.instructions == instructions("mcp-memory")
            made = await mcp.session.call_tool(
                "create_entities", {"entities": [entity("Sam", "likes tea"), entity("Ana", "runs billing")]}
            )
            assert not made.is_error
            assert json.loads(made.content[0].text) == [
                entity("Sam", "likes tea"),
                entity("Ana", "runs billing"),
            ]
            assert made.structured_content == {"entities": json.loads(made.content[0].text)}
            error, related = await mcp.call(
                "create_relations", relations=[{"from": "Sam", "to": "Ana", "relationType": "reports_to"}]
            )
            assert not error and related == [{"from": "Sam", "to": "Ana", "relationType": "reports_to"}]
            error, added = await mcp.call(
                "add_observations", observations=[{"entityName": "Sam", "contents": ["plays chess"]}]
            )
            assert added == [{"entityName": "Sam", "addedObservations": ["plays chess"]}]
            error, found = await mcp.call("search_nodes", query="chess")
            assert [e["name"] for e in found["entities"]] == ["Sam"]
            assert found["relations"] == [{"from": "Sam", "to": "Ana", "relationType": "reports_to"}]
            error, opened = await mcp.call("open_nodes", names=["Ana", "Nobody"])
            assert opened["entities"] == [entity("Ana", "runs billing")] and len(opened["relations"]) == 1
            error, graph = await mcp.call("read_graph")
            assert [e["name"] for e in graph["entities"]] == ["Ana", "Sam"] and "truncated" not in graph
            result = await mcp.session.call_tool(
                "delete_observations", {"deletions": [{"entityName": "Sam", "observations": ["likes tea"]}]}
            )
            assert result.structured_content == {
                "success": True,
                "message": "Observations deleted successfully",
            }
            result = await mcp.session.call_tool(
                "delete_relations",
                {"relations": [{"from": "Sam", "to": "Ana", "relationType": "reports_to"}]},
            )
            assert result.content[0].text == "Relations deleted successfully"
            result = await mcp.session.call_tool("delete_entities", {"entityNames": ["Ana", "Ghost"]})
            assert result.content[0].text == "Entities deleted successfully"
            error, graph = await mcp.call("read_graph")
            assert graph == {"entities": [entity("Sam", "plays chess")], "relations": []}
            error, refused = await mcp.call(
                "create_relations", relations=[{"from": "Sam", "to": "Ghost", "relationType": "r"}]
            )
            assert error and refused["error"]["code"] == "NOT_FOUND"

    anyio.run(scenario)
    session = graph_server.store.session("alice")
    assert session.graph.get("Sam").level == Level.PUBLIC and session.graph.stats().nodes == 1


def test_read_graph_is_paged_over_http(graph_server):
    total = PAGE_NODES + 30

    async def scenario() -> None:
        async with mcp_http(graph_server.url, "alice") as mcp:
            batch = [entity(f"node-{i:04d}", f"fact {i}") for i in range(total)]
            error, made = await mcp.call("create_entities", entities=batch)
            assert not error and len(made) == total
            error, first = await mcp.call("read_graph")
            assert len(first["entities"]) == PAGE_NODES and first["truncated"] is True
            assert len(json.dumps(first)) < 64 * 1024
            error, rest = await mcp.call("read_graph", cursor=first["next_cursor"])
            assert len(rest["entities"]) == total - PAGE_NODES and "next_cursor" not in rest
            seen = [e["name"] for e in first["entities"] + rest["entities"]]
            assert seen == sorted(e["name"] for e in batch)

    anyio.run(scenario)
