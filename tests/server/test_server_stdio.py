"""`stratamem mcp` spawned as a subprocess and driven by the official SDK's stdio client."""

from __future__ import annotations

import json
import sys

import anyio
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from server_support import cli_env

import stratamem as sm
from stratamem.tools import names


def _params(tmp_path, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "stratamem", "--db", str(tmp_path / "memory.db"), "mcp", *args],
        env=env or cli_env(tmp_path),
    )


async def _call(session: ClientSession, name: str, **arguments) -> tuple[bool, dict]:
    result = await session.call_tool(name, arguments)
    return result.is_error, json.loads(result.content[0].text)


def test_stdio_lists_saves_gets_searches_at_the_operator_taint(tmp_path):
    params = _params(tmp_path, "--agent", "alice", "--clearance", "CONFIDENTIAL", "--taint", "INTERNAL")

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            assert [t.name for t in listed.tools] == names("triggerfish")
            assert all(t.input_schema["type"] == "object" for t in listed.tools)

            # the model asks for RESTRICTED (and another agent): ignored, the operator's taint wins
            error, saved = await _call(
                session,
                "memory_save",
                key="plan",
                content="launch the rocket on friday",
                tags=["work"],
                classification="RESTRICTED",
                agent_id="bob",
            )
            assert not error and saved == {"saved": True, "key": "plan", "classification": "INTERNAL"}

            error, got = await _call(session, "memory_get", key="plan")
            assert not error and got["found"] and got["classification"] == "INTERNAL"
            assert got["content"] == "launch the rocket on friday" and got["tags"] == ["work"]

            error, found = await _call(session, "memory_search", query="rocket launches")
            assert not error and [r["key"] for r in found["results"]] == ["plan"]

            error, refused = await _call(session, "memory_save", key="", content="x")
            assert error and refused["error"]["code"] == "VALIDATION_ERROR"

    anyio.run(scenario)
    with sm.open_store(str(tmp_path / "memory.db")) as store:
        memories = list(store.export("alice"))
    assert [(m.key, m.level) for m in memories] == [("plan", sm.Level.INTERNAL)]


def test_stdio_takes_its_session_from_the_environment_and_zeroclaw_profile(tmp_path):
    env = cli_env(
        tmp_path,
        STRATAMEM_AGENT="carol",
        STRATAMEM_CLEARANCE="INTERNAL",
        STRATAMEM_SESSION="conv-42",
        STRATAMEM_PROFILE="zeroclaw",
    )

    async def scenario() -> None:
        async with (
            stdio_client(_params(tmp_path, env=env)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert [t.name for t in (await session.list_tools()).tools] == names("zeroclaw")
            result = await session.call_tool("memory_store", {"key": "lang", "content": "prefers Python"})
            assert not result.is_error and result.content[0].text == "Stored memory: lang"
            with pytest.raises(MCPError, match="unknown tool"):  # not a tool of this profile: protocol error
                await session.call_tool("memory_save", {"key": "k", "content": "v"})

    anyio.run(scenario)
    with sm.open_store(str(tmp_path / "memory.db")) as store:
        record = store.backend.session_record("conv-42")
        assert (record.agent_id, record.clearance) == ("carol", sm.Level.INTERNAL)
        assert [m.key for m in store.export("carol")] == ["lang"]


def test_stdio_refuses_a_starting_taint_above_the_clearance(tmp_path):
    from click.testing import CliRunner

    from stratamem.cli import cli

    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "memory.db"), "mcp", "--clearance", "INTERNAL", "--taint", "RESTRICTED"]
    )
    assert result.exit_code == 4 and "POLICY_BLOCKED" in result.output


@pytest.mark.parametrize("flag_wins", [True, False])
def test_stdio_settings_precedence(tmp_path, flag_wins):
    from stratamem.server.config import parse_config
    from stratamem.server.stdio import resolve_settings

    config = parse_config(
        '[mcp]\nagent = "from-file"\nclearance = "INTERNAL"\npeers = ["p1"]\n', tmp_path / "c.toml"
    )
    env = {"STRATAMEM_AGENT": "from-env"}
    flags = {"agent": "from-flag" if flag_wins else None, "peers": ()}
    settings = resolve_settings(flags, env, config)
    assert settings.agent == ("from-flag" if flag_wins else "from-env")
    assert settings.clearance is sm.Level.INTERNAL and settings.peers == ("p1",)
    assert resolve_settings({}, {}, None).clearance is None  # RESTRICTED for a new session; kept on resume


def test_stdio_warms_up_before_it_reads_its_first_message(tmp_path, monkeypatch):
    """The client's first tool call must not wait while detect-secrets' detectors load."""
    from stratamem.policy import credentials
    from stratamem.server import stdio

    loaded_when_serving = []

    async def serve(caller, extra, *_):
        loaded_when_serving.append(credentials._plugin_patterns.cache_info().currsize)

    credentials._plugin_patterns.cache_clear()
    monkeypatch.setattr(stdio, "_serve", serve)
    stdio.run_stdio(str(tmp_path / "m.db"), stdio.StdioSettings())
    assert loaded_when_serving == [1]


@pytest.mark.parametrize("profile", ["zeroclaw", "mcp-memory"])
def test_stdio_instructions_name_the_profiles_own_tools(tmp_path, profile):
    async def scenario() -> None:
        params = _params(tmp_path, "--profile", profile)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = {t.name for t in (await session.list_tools()).tools}
            text = session.instructions or ""
            assert "memory_save" not in text and "memory_search" not in text and "memory_get" not in text
            assert any(name in text for name in listed) and "Never save secrets" in text

    anyio.run(scenario)
