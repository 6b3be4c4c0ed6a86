"""The turn API as MCP tools, for runtimes that speak MCP: streamable HTTP at ``/mcp-turns``, and stdio.

Kept apart from ``/mcp`` on purpose: ``/mcp`` is the *model's* tool surface
(memory tools only), while these tools drive the lifecycle around the model
(begin, record tool results and usage, end) and belong to the runtime, as
the REST endpoints do. Same bearer tokens, same ownership rule (a session of
another principal is NOT_FOUND), same operations (``turn_ops``) and answers
as REST; errors come back as ``isError`` results in the CONTRACT's shape.

On stdio (``stratamem mcp --turns``) the same tools are served beside the
memory tools of the one session the process acts in: ``session_id`` may be
left out (it is that session), and any other id is NOT_FOUND, as for a
session of another principal over HTTP (a ``transcript_id`` naming any
other session reads as one that does not exist, as over HTTP).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from .. import shapes
from ..errors import NotFound, StratamemError
from ..policy.engine import Policy
from ..session import Session
from ..tools.executor import INTERNAL_ERROR
from ..turn import TurnSettings
from ..turn.errors import TurnError
from .auth import PRINCIPAL_KEY
from .mcp_tools import ExtraTools, server_version
from .state import ServerState, blocking
from .turn_ops import TurnOps

_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_SID = {"session_id": {**_STR, "description": "A session id from POST /v1/sessions"}}
_TID = {**_SID, "turn_id": {**_INT, "description": "The turn id turn_begin returned"}}


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
    }


TOOLS = [
    _tool(
        "turn_begin",
        "Begin a turn: record the user message; the prompt with [Memory context] and trimming.",
        {**_SID, "user_message": _STR, "origin": _STR, "system_prompt": _STR, "history_budget_tokens": _INT},
        ["session_id", "user_message"],
    ),
    _tool(
        "turn_prompt", "The prompt to send now.", {**_TID, "system_prompt": _STR}, ["session_id", "turn_id"]
    ),
    _tool(
        "turn_tool_calls",
        "Record the assistant's tool calls.",
        {**_TID, "content": _STR, "tool_calls": {"type": "array", "items": {"type": "object"}}},
        ["session_id", "turn_id", "tool_calls"],
    ),
    _tool(
        "turn_tool_result",
        "Record one tool result (bounded).",
        {
            **_TID,
            "call_id": _STR,
            "tool_name": _STR,
            "output": _STR,
            "success": {"type": "boolean"},
            "error": _STR,
            "duration_ms": {"type": "number"},
        },
        ["session_id", "turn_id", "call_id", "tool_name"],
    ),
    _tool(
        "turn_usage",
        "Record one model call's usage; returns the budget status.",
        {
            **_TID,
            "model": _STR,
            "input_tokens": _INT,
            "output_tokens": _INT,
            "cached_input_tokens": _INT,
            "cost_usd": {"type": ["string", "number"]},
        },
        ["session_id", "turn_id", "model"],
    ),
    _tool(
        "turn_end",
        "End the turn with the final assistant message (once).",
        {**_TID, "content": _STR},
        ["session_id", "turn_id", "content"],
    ),
    _tool(
        "transcript",
        "Transcript messages by range (omitted history).",
        {**_SID, "start": _INT, "limit": _INT, "transcript_id": _STR},
        ["session_id"],
    ),
]
_BY_NAME = {t["name"]: t for t in TOOLS}


def _call(ops: TurnOps, principal: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    session_id = args.pop("session_id", None)
    if not isinstance(session_id, str):
        raise MCPError(types.INVALID_PARAMS, "session_id is required")
    table: dict[str, Callable[..., dict[str, Any]]] = {
        "turn_prompt": ops.prompt,
        "turn_tool_calls": ops.tool_calls,
        "turn_tool_result": ops.tool_result,
        "turn_usage": ops.usage,
        "turn_end": ops.end,
    }
    if name == "turn_begin":
        return ops.begin(principal, session_id, args)
    if name == "transcript":
        return ops.transcript(principal, session_id, args)
    return table[name](principal, session_id, args.pop("turn_id", None), args)


def run(ops: TurnOps, principal: Any, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """Blocking: one turn operation as an MCP result (errors as ``isError`` with the error shape)."""
    try:
        data = _call(ops, principal, name, dict(arguments))
        error = False
    except TurnError as exc:
        data, error = {"error": {"code": exc.code, "message": exc.message}}, True
    except StratamemError as exc:
        data, error = shapes.error_from(exc), True
    except MCPError:
        raise
    except Exception:  # noqa: BLE001 - nothing internal leaks to the caller
        data, error = shapes.error("STORAGE_ERROR", INTERNAL_ERROR), True
    text = shapes.dumps(data)
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=json.loads(text), is_error=error
    )


def build_turn_server(state: ServerState, ops: TurnOps) -> Server[Any]:
    tools = [types.Tool.model_validate(t) for t in TOOLS]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        principal = ctx.request.scope.get(PRINCIPAL_KEY) if ctx.request is not None else None
        if principal is None:
            raise MCPError(types.INVALID_REQUEST, "unauthenticated")
        if params.name not in _BY_NAME:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")
        return await blocking(run, ops, principal, params.name, params.arguments or {})

    return Server(
        "stratamem-turns",
        version=server_version(),
        title="stratamem turn lifecycle",
        instructions="Runtime-side turn lifecycle: begin, tool calls and results, usage, end.",
        get_tool_input_schema=lambda name: _BY_NAME.get(name, {}).get("inputSchema"),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


class TurnMcpEndpoint:
    """The ASGI app at ``/mcp-turns`` (bearer auth is the app's middleware)."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.manager.handle_request(scope, receive, send)


class OneSession:
    """What ``TurnOps`` needs of the server's state, for the one operator-chosen session of a stdio server."""

    def __init__(self, session: Session, policy: Policy) -> None:
        self.session = session
        self.policy = policy

    def session_for(self, principal: Any, session_id: str) -> Session:
        if session_id != self.session.id:
            raise NotFound(f"no session {str(session_id)[:64]!r}")
        return self.session

    def policy_for(self, principal: Any) -> Policy:
        return self.policy


def stdio_turn_tools(session: Session, policy: Policy, settings: TurnSettings) -> ExtraTools:
    """The turn tools for ``stratamem mcp --turns``: as at ``/mcp-turns``, ``session_id`` optional."""
    ops = TurnOps(OneSession(session, policy), settings)
    schemas: dict[str, dict[str, Any]] = {}
    for tool in TOOLS:
        schema = json.loads(json.dumps(tool["inputSchema"]))
        schema["required"] = [r for r in schema["required"] if r != "session_id"]
        schema["properties"]["session_id"] = {**_STR, "description": "This server's session (the default)"}
        schemas[tool["name"]] = schema
    tools = tuple(types.Tool.model_validate({**t, "inputSchema": schemas[t["name"]]}) for t in TOOLS)

    async def call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        arguments.setdefault("session_id", session.id)
        return await blocking(run, ops, None, name, arguments)

    return ExtraTools(tools, call, schemas.get)
