"""The memory tools as an MCP server (official ``mcp`` SDK, low-level ``Server``).

Transport-neutral: stdio and streamable HTTP build the same server and differ
only in the *resolver*, which says who is calling — the stratamem session,
the operator policy and the tool profile. Nothing the model sends can change
those: the tool list comes from ``stratamem.tools.definitions`` and every call
goes through ``stratamem.tools.execute`` (policy, argument checks, audit),
which already ignores any ``classification``/``level``/``agent_id`` argument.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from .. import shapes
from ..errors import StratamemError
from ..policy.engine import Policy
from ..session import Session
from ..tools import definitions, execute, mcp_memory
from ..tools.executor import INTERNAL_ERROR
from ..tools.instructions import instructions
from ..tools.specs import MCP_MEMORY, TOOLS, TRIGGERFISH, parameters_schema, specs
from .state import blocking


def server_version() -> str:
    try:
        return version("stratamem")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a tool call runs for, as decided by the operator's side of the transport.

    ``session`` is blocking (it may open a session in the store) and is only
    called for a tool that exists, so a bad tool name never creates anything.
    ``elsewhere`` (``serve --workers``) runs the call in the resolved session
    in a worker process: (session id, tool, arguments) -> the tool's text,
    ``None`` for an unexpected error there. ``around`` (the HTTP server) runs a
    call of a known tool, ``around(name, run)`` calling ``run()``: its span and metrics.
    """

    session: Callable[[], Session]
    policy: Policy
    profile: str
    origin: str
    elsewhere: Callable[[str, str, dict[str, Any]], str | None] | None = None
    around: Callable[[str, Callable[[], str | None]], str | None] | None = None


Resolver = Callable[[ServerRequestContext[Any, Any]], Awaitable[Caller]]


@functools.lru_cache(maxsize=8)
def tool_list(profile: str, read_only: bool) -> tuple[types.Tool, ...]:
    """The MCP ``Tool`` objects of a profile (writing tools hidden when read-only)."""
    return tuple(types.Tool.model_validate(d) for d in definitions("mcp", profile, read_only=read_only))


def input_schema(name: str) -> dict[str, Any] | None:
    spec = TOOLS.get(name)
    return parameters_schema(spec) if spec is not None else None


def tool_result(text: str, name: str | None = None, profile: str | None = None) -> types.CallToolResult:
    """A tool's answer as MCP content; the JSON error shape sets ``isError``.

    JSON answers (triggerfish) are also given as structured content; the text
    block carries the exact same JSON for clients that only read text. The
    mcp-memory profile sends the official memory server's structured content.
    """
    data: Any = None
    parsed = text.startswith(("{", "["))
    if parsed:
        try:
            data = json.loads(text)
        except ValueError:
            parsed, data = False, None
    structured = data if isinstance(data, dict) else None
    if profile == MCP_MEMORY and name is not None and not shapes.is_error(data):
        structured = mcp_memory.structured(name, text, data) if parsed else mcp_memory.structured(name, text)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=structured,
        is_error=shapes.is_error(data),
    )


def run_tool(caller: Caller, name: str, arguments: object) -> str | None:
    """Blocking: resolve the session and execute one call; ``None`` for a tool this profile lacks."""
    if not isinstance(name, str) or name not in {s.name for s in specs(caller.profile)}:
        return None
    if caller.around is not None:
        return caller.around(name, lambda: _run_known(caller, name, arguments))
    return _run_known(caller, name, arguments)


def _run_known(caller: Caller, name: str, arguments: object) -> str | None:
    """A call of a tool the profile has: its session resolved, then here or in a worker."""
    try:
        session = caller.session()
    except StratamemError as exc:
        return shapes.dumps(shapes.error_from(exc))
    except Exception:  # noqa: BLE001 - the agent learns nothing about internals
        return shapes.dumps(shapes.error("STORAGE_ERROR", INTERNAL_ERROR))
    args = arguments if isinstance(arguments, dict) else {}
    if caller.elsewhere is not None:
        text = caller.elsewhere(session.id, name, args)
        return shapes.dumps(shapes.error("STORAGE_ERROR", INTERNAL_ERROR)) if text is None else text
    return execute(session, name, args, policy=caller.policy, profile=caller.profile, origin=caller.origin)


@dataclass(frozen=True, slots=True)
class ExtraTools:
    """More tools served beside the memory tools (``stratamem mcp --turns``: the runtime's turn tools)."""

    tools: tuple[types.Tool, ...]
    call: Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]
    schema: Callable[[str], dict[str, Any] | None]


def build_mcp_server(
    resolve: Resolver,
    extra: ExtraTools | None = None,
    *,
    profile: str = TRIGGERFISH,
    read_only: bool = False,
) -> Server[Any]:
    """An MCP server whose tools act for whoever ``resolve`` says is calling.

    ``profile`` and ``read_only`` choose the instructions sent at ``initialize``
    (``tools.instructions``): the server's profile, and read-only when every
    caller is (they are sent before anyone calls, so they cannot follow one caller).
    """
    extra_names = {t.name for t in extra.tools} if extra is not None else set()

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller = await resolve(ctx)
        tools = list(tool_list(caller.profile, caller.policy.read_only))
        return types.ListToolsResult(tools=tools + list(extra.tools) if extra is not None else tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if extra is not None and params.name in extra_names:
            return await extra.call(params.name, dict(params.arguments or {}))
        caller = await resolve(ctx)
        text = await blocking(run_tool, caller, params.name, params.arguments or {})
        if text is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")
        return tool_result(text, params.name, caller.profile)

    return Server(
        "stratamem",
        version=server_version(),
        title="stratamem memory",
        instructions=instructions(profile, read_only),
        get_tool_input_schema=(
            input_schema
            if extra is None
            else lambda name: extra.schema(name) if name in extra_names else input_schema(name)
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
