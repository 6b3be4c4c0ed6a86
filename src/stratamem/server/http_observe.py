"""Every HTTP request observed once: its request id, its span, its metrics (pure ASGI middleware).

- **Request id**: an incoming ``X-Request-Id`` of up to 128 letters, digits and ``._:-`` is kept,
  anything else replaced by a fresh one; it is set in :data:`REQUEST_ID` (the JSON log lines carry
  it) and echoed in the response's ``X-Request-Id``.
- **Span**: one ``SERVER`` span per request, named by method and route template, parent of the
  policy, store and embedding spans of the work the request does (``stratamem.tracing``); attributes
  are the method, the template, the status and the request id.
- **Metrics**: the request's count and latency by method, template and status (``metrics``).

The route label is the matched route's template with converters dropped
(``/v1/sessions/{session_id}/memories/{key}``), never the path itself: keys
and session ids are user data. A request no route matches is ``(unmatched)``.
"""

from __future__ import annotations

import contextvars
import re
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import tracing
from .auth import PRINCIPAL_KEY

if TYPE_CHECKING:
    from .metrics import ServerMetrics

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("stratamem_request_id", default=None)
HEADER = b"x-request-id"
UNMATCHED = "(unmatched)"
_WELL_FORMED = re.compile(rb"[A-Za-z0-9._:\-]{1,128}")
_CONVERTER = re.compile(r"\{(\w+):\w+\}")


def request_id(scope: Scope) -> str:
    """The client's ``X-Request-Id`` when well formed, else a new random one."""
    for name, value in scope.get("headers", ()):
        if name == HEADER and _WELL_FORMED.fullmatch(value):
            return str(value.decode("ascii"))
    return secrets.token_hex(16)


def route_template(routes: Sequence[BaseRoute], scope: Scope) -> str:
    """The template of the route that answered (or would have: a request refused before routing)."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        path = None
        for candidate in routes:
            match, _ = candidate.matches(scope)
            if match is Match.FULL:
                path = getattr(candidate, "path", None)
                break
            if match is Match.PARTIAL and path is None:  # the path matched, the method did not
                path = getattr(candidate, "path", None)
    return _CONVERTER.sub(r"{\1}", path) if isinstance(path, str) and path else UNMATCHED


class ObservedRequests:
    """Request id, span and metrics around the whole app (outside authentication, so 401s count too)."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute], metrics: ServerMetrics) -> None:
        self.app = app
        self.routes = routes
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope)
        token = REQUEST_ID.set(rid)
        status, route = 500, UNMATCHED
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != HEADER]
                message = {**message, "headers": [*headers, (HEADER, rid.encode("ascii"))]}
            await send(message)

        method = str(scope.get("method", "GET"))
        try:
            attributes = {"http.request.method": method, "stratamem.request_id": rid}
            with tracing.span("HTTP request", attributes, server=True) as span:
                try:
                    await self.app(scope, receive, send_with_id)
                finally:
                    route = route_template(self.routes, scope)
                    _finish(span, method, route, status)
        finally:
            principal: Any = scope.get(PRINCIPAL_KEY)
            agent = getattr(principal, "agent", None)
            self.metrics.request(method, route, status, time.perf_counter() - started, agent)
            REQUEST_ID.reset(token)


def _finish(span: Any, method: str, route: str, status: int) -> None:
    if span is None:
        return
    span.update_name(f"{method} {route}")
    span.set_attribute("http.route", route)
    span.set_attribute("http.response.status_code", status)


__all__ = ["REQUEST_ID", "ObservedRequests", "request_id", "route_template"]
