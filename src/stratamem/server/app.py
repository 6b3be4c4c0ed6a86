"""The one ASGI application ``stratamem serve`` runs: MCP at /mcp, REST at /v1, console at /ui, docs.

Assembly only: authentication wraps everything, errors from routing (404,
405) and anything unexpected come back in the CONTRACT's error shape, and
the lifespan runs the MCP session manager. The store is owned by the caller
(it outlives the app and is closed after the server has drained).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..policy.redact import scrubbed_logger
from . import ui
from .auth import BearerAuth
from .console import ConsoleApi
from .console_openapi import console_paths
from .devtoken import is_loopback
from .health import Health
from .http_observe import ObservedRequests
from .idempotency import Idempotency
from .idempotency import describe as describe_idempotency
from .mcp_http import McpEndpoint, http_resolver
from .mcp_strict import StrictBodies
from .mcp_tools import build_mcp_server
from .mcp_turns import TurnMcpEndpoint, build_turn_server
from .metrics import ServerMetrics
from .observability import DEFAULT_METRICS, MetricsSettings
from .openapi import document
from .responses import error_response, internal_error, json_text
from .rest import RestApi
from .rest_turns import TurnApi
from .state import ServerState
from .turn_ops import TurnOps

logger = scrubbed_logger("stratamem.server")

LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")


def transport_security(host: str, allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection for /mcp: on for loopback and for configured host names.

    Off a loopback address with no ``allowed_hosts`` the Host header cannot be
    predicted (proxies, DNS names), so only the bearer token protects /mcp.
    """
    if is_loopback(host):
        hosts = [*LOOPBACK_HOSTS, *allowed_hosts]
        return TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=list(LOOPBACK_ORIGINS))
    if allowed_hosts:
        origins = [f"{scheme}://{h}" for h in allowed_hosts for scheme in ("http", "https")]
        return TransportSecuritySettings(allowed_hosts=list(allowed_hosts), allowed_origins=origins)
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response("NOT_FOUND", f"no such endpoint: {request.url.path}")
    if exc.status_code == 405:
        return error_response(
            "VALIDATION_ERROR",
            f"method {request.method} is not allowed here",
            405,
            headers=dict(exc.headers or {}),
        )
    return error_response("VALIDATION_ERROR", str(exc.detail), exc.status_code)


async def _unexpected(request: Request, exc: Exception) -> Response:
    logger.error("unexpected error in %s %s", request.method, request.url.path, exc_info=exc)
    return internal_error()


def build_app(
    state: ServerState,
    *,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    metrics: MetricsSettings = DEFAULT_METRICS,
) -> Starlette:
    """The server's ASGI app for ``state`` (``host`` picks the /mcp Host-header checks and who may read
    /metrics without a token)."""
    observed = ServerMetrics(state, metrics, host)  # first: the store's backend is timed from here on
    manager = StreamableHTTPSessionManager(
        app=build_mcp_server(http_resolver(state), profile=state.profile, read_only=state.policy.read_only),
        json_response=True,
        security_settings=transport_security(host, allowed_hosts),
    )
    ops = TurnOps(state, state.turn_settings)
    turn_manager = StreamableHTTPSessionManager(
        app=build_turn_server(state, ops),
        json_response=True,
        security_settings=transport_security(host, allowed_hosts),
    )
    doc = document()
    doc["paths"].update(console_paths())
    describe_idempotency(doc)
    openapi_text = json.dumps(doc, ensure_ascii=False)

    async def openapi_json(request: Request) -> Response:
        return json_text(openapi_text)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run(), turn_manager.run():
            yield

    routes = [
        Route("/mcp", StrictBodies(McpEndpoint(state, manager))),
        *RestApi(state).routes(),
        Route("/mcp-turns", StrictBodies(TurnMcpEndpoint(turn_manager))),
        *TurnApi(state, ops).routes(),
        *ConsoleApi(state).routes(),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        *ui.routes(doc),
        *Health(state).routes(),
        *observed.routes(),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(ObservedRequests, routes=routes, metrics=observed),
            Middleware(ui.SecurityHeaders),
            Middleware(BearerAuth, principals=state.principals),
            Middleware(Idempotency, state=state),
        ],
        exception_handlers={HTTPException: _http_error, Exception: _unexpected},
        lifespan=lifespan,
    )
