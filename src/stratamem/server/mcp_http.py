"""MCP over streamable HTTP at ``/mcp``: which stratamem session each call acts in.

The SDK's ``StreamableHTTPSessionManager`` speaks the protocol; this module
only decides the session, in this order:

1. ``X-Stratamem-Session: <id>`` on the request — a session the runtime
   created (``POST /v1/sessions``) and set on its MCP client's HTTP headers.
   It must be usable by the caller's token (else 404). Headers come from the
   runtime's configuration, never from the model.
2. A stateful MCP connection (``mcp-session-id``, initialize handshake) is
   bound to one stratamem session when it opens; the session id is sent back
   in every response as ``X-Stratamem-Session-Id`` and can be looked up with
   ``GET /v1/mcp-sessions/{mcp-session-id}``, so the runtime can escalate it.
3. A stateless call (2026-07-28 per-request protocol, no session header)
   runs in a fresh session at PUBLIC: with no conversation to attach taint
   to, it sees only PUBLIC memories and writes at PUBLIC.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import Message, Receive, Scope, Send

from ..errors import StratamemError
from ..session import Session
from .auth import PRINCIPAL_KEY
from .mcp_tools import Caller, Resolver
from .principals import Principal
from .responses import from_exception
from .state import ServerState, blocking
from .tool_workers import ToolCall, dispatch, observed

SESSION_HEADER = "x-stratamem-session"  # request: act in this existing session
SESSION_ID_HEADER = "x-stratamem-session-id"  # response: the session this MCP connection acts in


def http_resolver(state: ServerState) -> Resolver:
    """Who an MCP-over-HTTP tool call runs for: the token's principal, in the session chosen above."""

    async def resolve(ctx: ServerRequestContext[Any, Any]) -> Caller:
        request = ctx.request
        principal: Principal | None = request.scope.get(PRINCIPAL_KEY) if request is not None else None
        if request is None or principal is None:  # only reachable if the app is wired without BearerAuth
            raise MCPError(INVALID_REQUEST, "unauthenticated")
        chosen = request.headers.get(SESSION_HEADER)
        mcp_session = request.headers.get(MCP_SESSION_ID_HEADER)
        found = await blocking(state.bindings.find, mcp_session) if mcp_session else None
        binding = found if found is not None and found.principal == principal.name else None
        if mcp_session and not chosen and found is None:
            # a stateful connection whose binding expired: give it one again
            opened = await blocking(state.open_session, principal)
            binding = await blocking(state.bindings.bind, mcp_session, principal.name, opened.id)

        def session() -> Session:
            if chosen:
                return state.session_for(principal, chosen)
            if binding is not None:
                return state.session_for(principal, binding.session_id)
            return state.open_session(principal)

        def elsewhere(session_id: str, name: str, arguments: dict[str, Any]) -> str | None:
            return dispatch(
                state, ToolCall(principal, session_id, name, arguments, state.profile, "mcp-http")
            )

        def around(name: str, run: Callable[[], str | None]) -> str | None:
            return observed(state, name, principal.agent, run)

        return Caller(
            session=session,
            policy=state.policy_for(principal),
            profile=state.profile,
            origin="mcp-http",
            elsewhere=elsewhere if state.workers is not None else None,
            around=around,
        )

    return resolve


class McpEndpoint:
    """The ASGI app at ``/mcp``: the SDK's transport, plus session binding and exposure."""

    def __init__(self, state: ServerState, manager: StreamableHTTPSessionManager) -> None:
        self.state = state
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal: Principal = scope[PRINCIPAL_KEY]
        headers = Headers(scope=scope)
        chosen = headers.get(SESSION_HEADER)
        if chosen:
            try:
                await blocking(self.state.session_for, principal, chosen)
            except StratamemError as exc:
                await from_exception(exc)(scope, receive, send)
                return
        request_mcp_session = headers.get(MCP_SESSION_ID_HEADER)
        status: list[int] = []

        async def send_with_session(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
                if message["status"] < 400:
                    await self._expose(message, principal, chosen, request_mcp_session)
            await send(message)

        await self.manager.handle_request(scope, receive, send_with_session)
        if scope["method"] == "DELETE" and request_mcp_session and status and status[0] < 400:
            await blocking(self.state.bindings.drop, request_mcp_session)

    async def _expose(
        self, message: Message, principal: Principal, chosen: str | None, request_mcp_session: str | None
    ) -> None:
        """Bind a newly opened MCP session, and name its stratamem session in the response headers."""
        response_headers = MutableHeaders(scope=message)
        mcp_session = response_headers.get(MCP_SESSION_ID_HEADER) or request_mcp_session
        if not mcp_session:
            return
        binding = await blocking(self.state.bindings.find, mcp_session)
        if binding is not None and binding.principal != principal.name:
            return
        if binding is None:
            session_id = chosen or (await blocking(self.state.open_session, principal)).id
            binding = await blocking(self.state.bindings.bind, mcp_session, principal.name, session_id)
        response_headers[SESSION_ID_HEADER] = chosen or binding.session_id
