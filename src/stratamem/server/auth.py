"""Bearer-token authentication for every HTTP request (pure ASGI middleware).

The principal a token resolves to is put in the ASGI scope; everything
behind this middleware reads the agent, clearance and peers from there and
nowhere else. The scope also gets the MCP SDK's ``AuthenticatedUser`` so the
SDK's own check — an ``mcp-session-id`` answers only the credential that
created it — applies on ``/mcp`` as well.

Only the health probes, the metrics (which check access themselves), the API description and docs, and the console's
page and files (``/ui``: it asks for a token before it reads anything) are
reachable without a token; they reveal nothing about any memory.
"""

from __future__ import annotations

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from .principals import Principal, Principals
from .responses import unauthenticated

PRINCIPAL_KEY = "stratamem.principal"
# /metrics checks its own access (``metrics.MetricsSettings``: open on loopback, an operator token elsewhere)
PUBLIC_PATHS = frozenset({"/v1/health", "/v1/health/ready", "/metrics", "/openapi.json", "/", "/favicon.ico"})
PUBLIC_PREFIXES = ("/docs", "/ui")  # static pages and their files


def bearer_token(headers: Headers) -> str | None:
    value = headers.get("authorization")
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def principal_of(conn: HTTPConnection | Scope) -> Principal:
    """The authenticated principal of a request (set by :class:`BearerAuth`)."""
    scope = conn.scope if isinstance(conn, HTTPConnection) else conn
    principal: Principal = scope[PRINCIPAL_KEY]
    return principal


class BearerAuth:
    """Reject requests without a known token (401); attach the principal otherwise."""

    def __init__(self, app: ASGIApp, principals: Principals) -> None:
        self.app = app
        self.principals = principals

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
            return
        principal = self.principals.authenticate(bearer_token(Headers(scope=scope)))
        if principal is None:
            await unauthenticated()(scope, receive, send)
            return
        scope[PRINCIPAL_KEY] = principal
        scope["user"] = AuthenticatedUser(
            AccessToken(token="(withheld)", client_id=principal.name, scopes=[])
        )
        scope["auth"] = AuthCredentials([])
        await self.app(scope, receive, send)
