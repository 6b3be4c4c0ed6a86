"""The MCP server instructions of each profile name only that profile's tools, and say what to save."""

from __future__ import annotations

import re

import pytest

from stratamem.server.mcp_tools import build_mcp_server
from stratamem.tools.instructions import instructions
from stratamem.tools.specs import PROFILES, TOOLS, specs

_IDENTIFIER = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")


def named_tools(text: str) -> set[str]:
    """Every tool name of any profile in ``text``, and anything spelt like one (snake_case)."""
    words = set(re.findall(r"[a-z_]+", text))
    return {w for w in words if w in TOOLS} | set(_IDENTIFIER.findall(text))


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("profile", PROFILES)
def test_every_tool_the_instructions_name_is_offered_by_the_profile(profile: str, read_only: bool) -> None:
    offered = {spec.name for spec in specs(profile, read_only=read_only)}
    named = named_tools(instructions(profile, read_only))
    assert named, "the instructions should say which tools to use"
    assert named <= offered, named - offered


@pytest.mark.parametrize("profile", PROFILES)
def test_the_instructions_say_when_to_save_what_never_to_save_and_that_levels_are_automatic(
    profile: str,
) -> None:
    text = instructions(profile)
    writing = {spec.name for spec in specs(profile) if spec.writes}
    assert named_tools(text) & writing  # which tool saves
    assert "lasting fact, preference, decision or correction" in text  # when
    assert "Never save secrets" in text and "refuses" in text  # what never, and why
    assert "Levels are automatic" in text and "cannot choose" in text


@pytest.mark.parametrize("profile", PROFILES)
def test_a_read_only_connection_is_told_so_and_sent_to_no_writing_tool(profile: str) -> None:
    text = instructions(profile, read_only=True)
    assert "read-only" in text and "Never save secrets" not in text
    assert not named_tools(text) & {spec.name for spec in specs(profile) if spec.writes}


@pytest.mark.parametrize("profile", PROFILES)
def test_the_mcp_server_sends_its_profiles_instructions(profile: str) -> None:
    async def resolve(ctx):  # never called: the instructions are fixed when the server is built
        raise AssertionError

    assert build_mcp_server(resolve, profile=profile).instructions == instructions(profile)
    assert build_mcp_server(resolve, profile=profile, read_only=True).instructions == instructions(
        profile, True
    )
