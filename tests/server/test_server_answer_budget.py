"""The answer budget holds on every transport: REST, MCP over HTTP, ``serve --workers`` and MCP stdio."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import json
import sys

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from server_support import (
    auth,
    cli_env,
    free_port,
    live_server,
    mcp_http,
    server_config,  # noqa: F401
    start_serve,
    token,
    write_config,
)

import stratamem as sm
from stratamem.errors import ValidationError
from stratamem.server.config import load_config

BUDGET = 4096
ENTITY_OBSERVATIONS = [f"fact {j} " + "o" * 400 for j in range(30)]


def _seed(store: sm.Store, agent: str = "alice") -> None:
    """Memories and graph records of ``agent`` whose whole listings are several budgets long."""
    session = store.session(agent)
    session.save_many([{"key": f"k{i:02}", "content": f"apple {i} " + "x" * 900} for i in range(12)])
    for name in ("e0", "e1", "e2"):
        session.graph.capture(name, "thing", observations=ENTITY_OBSERVATIONS)


def _pages(client: httpx2.Client, path: str, field: str, **params: str) -> list[dict]:
    seen: list[dict] = []
    cursor = None
    for _ in range(100):
        answer = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert answer.status_code == 200 and len(answer.text) <= BUDGET
        seen += answer.json()[field]
        cursor = answer.json().get("next_cursor")
        if cursor is None:
            return seen
    raise AssertionError("no last page")


def test_rest_and_mcp_http_answers_fit_the_budget_and_continue(tmp_path, server_config):
    store = sm.open_store(str(tmp_path / "budget.db"), max_answer_chars=BUDGET)
    _seed(store)
    with live_server(store, server_config) as live, live.client("alice") as rest:
        sid = rest.post("/v1/sessions").json()["id"]
        memories = _pages(rest, f"/v1/sessions/{sid}/memories", "memories", limit="200")
        assert [m["key"] for m in memories] == [f"k{i:02}" for i in range(12)]
        results = _pages(rest, f"/v1/sessions/{sid}/search", "results", query="apple", max_results="100")
        assert sorted(r["key"] for r in results) == [f"k{i:02}" for i in range(12)]
        graph = rest.post(f"/v1/sessions/{sid}/graph/read_graph", json={})
        assert len(graph.text) <= BUDGET and graph.json()["truncated"] is True
        assert graph.json()["entities"][0]["omittedObservations"] > 0

        with sm.Client(live.url, token("alice")) as client:  # the Python client continues a cut search
            first = client.search(sid, "apple", max_results=100)
            rest_of = client.search(sid, "apple", max_results=100, cursor=first["next_cursor"])
            assert rest_of["results"][0]["key"] not in {r["key"] for r in first["results"]}

        async def over_mcp() -> None:
            async with mcp_http(live.url, "alice") as mcp:
                for name, arguments in (
                    ("memory_list", {"limit": 200}),
                    ("memory_search", {"query": "apple"}),
                ):
                    result = await mcp.session.call_tool(name, arguments)
                    text = result.content[0].text
                    assert len(text) <= BUDGET and json.loads(text)["truncated"] is True
                    assert result.structured_content["truncated"] is True

        anyio.run(over_mcp)
    store.close()


def test_serve_with_workers_takes_the_budget_from_its_config(tmp_path):
    db = tmp_path / "workers.db"
    store = sm.open_store(str(db))
    _seed(store)
    store.close()
    config = write_config(tmp_path, f"[server]\nmax_answer_chars = {BUDGET}\n")
    port = free_port()
    proc = start_serve(tmp_path, db, port, "--config", str(config), "--workers", "2")
    try:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", headers=auth("alice"), timeout=30) as rest:
            sid = rest.post("/v1/sessions").json()["id"]
            memories = _pages(rest, f"/v1/sessions/{sid}/memories", "memories", limit="200")
            assert len(memories) == 12
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def test_stdio_takes_the_budget_from_the_environment(tmp_path):
    db = tmp_path / "stdio.db"
    store = sm.open_store(str(db))
    _seed(store, "main")
    store.close()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "stratamem", "--db", str(db), "mcp"],
        env=cli_env(tmp_path, STRATAMEM_MAX_ANSWER_CHARS=str(BUDGET)),
    )

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("memory_list", {"limit": 200})
            answer = json.loads(result.content[0].text)
            assert len(result.content[0].text) <= BUDGET and answer["truncated"] is True
            follow = await session.call_tool("memory_list", {"limit": 200, "cursor": answer["next_cursor"]})
            assert json.loads(follow.content[0].text)["memories"][0]["key"] > answer["memories"][-1]["key"]

    anyio.run(scenario)


def test_a_bad_budget_in_the_config_is_refused(tmp_path):
    path = write_config(tmp_path, "[server]\nmax_answer_chars = 12\n")
    with pytest.raises(ValidationError, match="max_answer_chars"):
        load_config(path)
