"""The REST API under ``/v1``: sessions for the runtime, memories in the tools' shapes, audit.

Memory endpoints do not re-implement anything: they call
``stratamem.tools.execute`` with the triggerfish tool of the same name, so a
REST answer is byte for byte the tool's answer (same policy, same argument
checks, same audit) and only the HTTP status is added. Session endpoints are
the runtime's side: creating a session, reading it, and raising its taint
(a level, or a compartment entered) — the only way taint goes up over HTTP.

Every session id is checked against the caller's principal
(``ServerState.session_for``); another principal's session is 404.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import shapes, strict_json
from ..errors import NotFound, StratamemError, ValidationError
from ..labels import Label
from ..levels import Level
from ..paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from ..policy.redact import scrubbed_logger
from ..tools import DIALECTS, PROFILES, definitions, mcp_memory
from ..tools.specs import MCP_MEMORY, TRIGGERFISH, specs
from ..validation import MAX_RESULTS
from . import payloads
from .auth import principal_of
from .mcp_tools import server_version
from .principals import Principal
from .query_params import MAX_POSITION, Count, Spec, Text, read_given, read_query
from .responses import error_response, from_exception, from_tool_text, internal_error, json_response
from .state import ServerState, blocking
from .tool_workers import ToolCall, run_call

logger = scrubbed_logger("stratamem.server")

DEFAULT_AUDIT_LIMIT = 100
MAX_AUDIT_LIMIT = 1000
MAX_LINEAGE_CHARS = 256
MAX_QUERY_CHARS = 64 * 1024
DEFAULT_RESULTS = 10
DEFAULT_ESCALATE_REASON = "raised by the runtime over HTTP"
DEFAULT_ENTER_REASON = "compartment entered by the runtime over HTTP"
MAX_BATCH_BODY_BYTES = 64 * 1024 * 1024  # a batch body is read whole: bounded whatever max_batch says

Handler = Callable[[Request], Awaitable[Response]]


class BodyTooLarge(ValidationError):
    """A request body over the limit (answered 413)."""


Method = Callable[..., Awaitable[Response]]


def guard(on_error: Callable[[StratamemError], Response]) -> Callable[[Method], Method]:
    """A decorator turning library errors into error bodies via ``on_error``; never leaks internals."""

    def decorate(handler: Method) -> Method:
        @functools.wraps(handler)
        async def wrapped(self: Any, request: Request) -> Response:
            try:
                return await handler(self, request)
            except BodyTooLarge as exc:
                return error_response(exc.code, exc.message, 413)
            except StratamemError as exc:
                return on_error(exc)
            except Exception:
                logger.exception("unexpected error in %s %s", request.method, request.url.path)
                return internal_error()

        return wrapped

    return decorate


endpoint = guard(from_exception)  # the CONTRACT's error bodies and statuses


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The request body as a JSON object (``{}`` when empty), or VALIDATION_ERROR.

    Read by ``strict_json.read_json``, as every import and MCP message is: a repeated key, NaN,
    a lone surrogate, invalid UTF-8 or deep nesting is refused with the position named.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"the request body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"the request body is larger than {limit} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    try:
        data = strict_json.read_json(raw, max_bytes=limit)
    except strict_json.JsonRefused as exc:
        raise exc.located("request body") from None
    if not isinstance(data, dict):
        raise ValidationError("the request body must be a JSON object")
    return data


LIST_QUERY: Spec = {
    "tag": Text(),
    "limit": Count(1, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE),
    "cursor": Text(),
    "occurred_since": Text(),
    "occurred_until": Text(),
}
SEARCH_QUERY: Spec = {
    "query": Text(MAX_QUERY_CHARS, default=""),
    "max_results": Count(1, MAX_RESULTS, DEFAULT_RESULTS),
    "cursor": Text(),
}
AUDIT_QUERY: Spec = {
    "limit": Count(1, MAX_AUDIT_LIMIT, DEFAULT_AUDIT_LIMIT),
    "after": Count(0, MAX_POSITION),
    "before": Count(0, MAX_POSITION),
    "lineage": Text(MAX_LINEAGE_CHARS),
}
TOOLS_QUERY: Spec = {
    "dialect": Text(choices=tuple(DIALECTS), default="openai"),
    "profile": Text(choices=tuple(PROFILES)),
}
NO_QUERY: Spec = {}

S = "/v1/sessions/{session_id}"
#: the query parameters of every GET route, as the OpenAPI document names its paths
QUERIES: dict[str, Spec] = {
    f"{S}/memories": LIST_QUERY,
    f"{S}/search": SEARCH_QUERY,
    "/v1/audit": AUDIT_QUERY,
    "/v1/tools": TOOLS_QUERY,
    "/v1/health": NO_QUERY,
    "/v1/health/ready": NO_QUERY,
    S: NO_QUERY,
    f"{S}/memories/{{key}}": NO_QUERY,
    "/v1/mcp-sessions/{mcp_session_id}": NO_QUERY,
    "/v1/audit/verify": NO_QUERY,
}


class RestApi:
    """The ``/v1`` endpoints of one server."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        # content is JSON-escaped (up to 6 bytes per byte), plus room for key and tags
        self.max_body_bytes = state.store.max_content_bytes * 6 + 64 * 1024
        # a batch: up to max_batch items of a few KB each typically; one item may still be the largest
        self.max_batch_body_bytes = max(
            self.max_body_bytes, min(MAX_BATCH_BODY_BYTES, state.store.max_batch * 16 * 1024)
        )

    def routes(self) -> list[Route]:
        s = "/v1/sessions/{session_id}"
        return [  # the router tries these in order: the busiest first (no two paths overlap)
            Route(f"{s}/search", self.search_post, methods=["POST"]),
            Route(f"{s}/search", self.search_get, methods=["GET"]),
            Route("/v1/health", self.health, methods=["GET"]),
            Route("/v1/tools", self.tools, methods=["GET"]),
            Route("/v1/sessions", self.create_session, methods=["POST"]),
            Route(s, self.get_session, methods=["GET"]),
            Route(f"{s}/escalate", self.escalate, methods=["POST"]),
            Route(f"{s}/enter", self.enter, methods=["POST"]),
            Route(f"{s}/reset", self.reset, methods=["POST"]),
            Route(f"{s}/memories", self.list_memories, methods=["GET"]),
            Route(f"{s}/memories", self.post_memory, methods=["POST"]),
            Route(f"{s}/memories:batch", self.post_batch, methods=["POST"]),
            Route(f"{s}/memories/{{key:path}}", self.get_memory, methods=["GET"]),
            Route(f"{s}/memories/{{key:path}}", self.put_memory, methods=["PUT"]),
            Route(f"{s}/memories/{{key:path}}", self.delete_memory, methods=["DELETE"]),
            Route(f"{s}/graph/{{tool}}", self.graph_tool, methods=["POST"]),
            Route("/v1/mcp-sessions/{mcp_session_id}", self.mcp_session, methods=["GET"]),
            Route("/v1/audit", self.audit, methods=["GET"]),
            Route("/v1/audit/verify", self.audit_verify, methods=["GET"]),
        ]

    # memories: the tools, over HTTP ------------------------------------------------------
    async def _run(
        self, request: Request, name: str, arguments: Any, profile: str = TRIGGERFISH
    ) -> str | None:
        """A tool call in the request's session: in a worker process with ``--workers``, else here."""
        call = ToolCall(principal_of(request), request.path_params["session_id"], name, arguments, profile)
        return await blocking(run_call, self.state, call)

    async def _tool(self, request: Request, name: str, arguments: dict[str, Any]) -> Response:
        text = await self._run(request, name, arguments)
        return internal_error() if text is None else from_tool_text(text)

    @endpoint
    async def post_memory(self, request: Request) -> Response:
        return await self._tool(request, "memory_save", await read_json(request, self.max_body_bytes))

    @endpoint
    async def post_batch(self, request: Request) -> Response:
        """memory_save_many: ``{"items": [...]}`` in one transaction, all or nothing (the bad item's index)."""
        return await self._tool(
            request, "memory_save_many", await read_json(request, self.max_batch_body_bytes)
        )

    @endpoint
    async def put_memory(self, request: Request) -> Response:
        body = await read_json(request, self.max_body_bytes)
        key = request.path_params["key"]
        if "key" in body and body["key"] != key:
            raise ValidationError("the key in the body differs from the key in the path")
        return await self._tool(request, "memory_save", {**body, "key": key})

    @endpoint
    async def get_memory(self, request: Request) -> Response:
        read_query(request.query_params, NO_QUERY)
        return await self._tool(request, "memory_get", {"key": request.path_params["key"]})

    @endpoint
    async def delete_memory(self, request: Request) -> Response:
        return await self._tool(request, "memory_delete", {"key": request.path_params["key"]})

    @endpoint
    async def list_memories(self, request: Request) -> Response:
        """One page (``?limit=``, default 50, 1 to 200; ``?cursor=`` from the previous page's next_cursor)."""
        return await self._tool(request, "memory_list", read_given(request.query_params, LIST_QUERY))

    @endpoint
    async def search_get(self, request: Request) -> Response:
        """``?query=`` (empty: the most recent), ``?max_results=`` 1 to 100, a cut answer's ``?cursor=``."""
        return await self._tool(request, "memory_search", read_given(request.query_params, SEARCH_QUERY))

    @endpoint
    async def search_post(self, request: Request) -> Response:
        return await self._tool(request, "memory_search", await read_json(request, self.max_body_bytes))

    @endpoint
    async def graph_tool(self, request: Request) -> Response:
        """The knowledge graph: one mcp-memory tool, its arguments as the body, its structured answer back."""
        name = request.path_params["tool"]
        if name not in {spec.name for spec in specs(MCP_MEMORY)}:
            raise NotFound(
                f"no graph tool {name!r}; use one of {', '.join(s.name for s in specs(MCP_MEMORY))}"
            )
        text = await self._run(request, name, await read_json(request, self.max_body_bytes), MCP_MEMORY)
        if text is None:
            return internal_error()
        structured = mcp_memory.structured(name, text)
        return from_tool_text(text if structured is None else shapes.dumps(structured))

    # sessions: the runtime's side -----------------------------------------------------------
    @endpoint
    async def create_session(self, request: Request) -> Response:
        body = await read_json(request, self.max_body_bytes)
        clearance = Level.parse(body["clearance"]) if body.get("clearance") is not None else None
        principal = principal_of(request)

        def create() -> dict[str, Any]:
            return payloads.session(self.state.open_session(principal, clearance).record, (), self._names)

        shape = await blocking(create)
        return json_response(shape, 201, {"Location": f"/v1/sessions/{shape['id']}"})

    def _names(self, code: int) -> frozenset[str]:
        return self.state.store.compartments.names_of(code)

    def _session_shape(self, principal: Principal, session_id: str) -> dict[str, Any]:
        session = self.state.session_for(principal, session_id)
        return payloads.session(session.record, session.taint_history, self._names)

    @endpoint
    async def get_session(self, request: Request) -> Response:
        read_query(request.query_params, NO_QUERY)
        return json_response(
            await blocking(self._session_shape, principal_of(request), request.path_params["session_id"])
        )

    @endpoint
    async def escalate(self, request: Request) -> Response:
        body = await read_json(request, self.max_body_bytes)
        if body.get("level") is None:
            raise ValidationError("level is required, one of " + ", ".join(Level.__members__))
        level = Level.parse(body["level"])
        return await self._raise_taint(request, body.get("reason", DEFAULT_ESCALATE_REASON), level)

    @endpoint
    async def enter(self, request: Request) -> Response:
        """Add a compartment to the taint: ``{"compartment": "HR", "reason": ...}``. One the session's
        clearance lacks is POLICY_BLOCKED with the very answer of a level above it."""
        body = await read_json(request, self.max_body_bytes)
        name = body.get("compartment")
        if not isinstance(name, str):
            raise ValidationError("compartment is required: the name of one the session is cleared for")
        return await self._raise_taint(request, body.get("reason", DEFAULT_ENTER_REASON), name)

    async def _raise_taint(self, request: Request, reason: object, to: Level | str) -> Response:
        """Raise the path's session to ``to`` — a level (escalate) or a compartment's name (enter) — and
        answer the session with its history."""
        if not isinstance(reason, str):
            raise ValidationError("reason must be a string")
        principal = principal_of(request)

        def act() -> dict[str, Any]:
            session = self.state.session_for(principal, request.path_params["session_id"])
            source = f"http:{principal.name}"
            if isinstance(to, Level):
                session.escalate(to, reason[:1000], source=source)
            else:
                session.enter(to, reason[:1000], source=source)
            return payloads.session(session.record, session.taint_history, self._names)

        return json_response(await blocking(act))

    @endpoint
    async def reset(self, request: Request) -> Response:
        principal = principal_of(request)

        def act() -> dict[str, Any]:
            fresh = self.state.session_for(principal, request.path_params["session_id"]).reset()
            return payloads.session(fresh.record, (), self._names)

        shape = await blocking(act)
        return json_response(shape, 201, {"Location": f"/v1/sessions/{shape['id']}"})

    @endpoint
    async def mcp_session(self, request: Request) -> Response:
        """The stratamem session an MCP-over-HTTP connection (``mcp-session-id``) acts in."""
        read_query(request.query_params, NO_QUERY)
        principal = principal_of(request)
        binding = await blocking(
            self.state.bindings.get, request.path_params["mcp_session_id"], principal.name
        )
        if binding is None:
            raise NotFound("no such MCP session")
        return json_response(await blocking(self._session_shape, principal, binding.session_id))

    # audit, tools, health -------------------------------------------------------------------
    @endpoint
    async def audit(self, request: Request) -> Response:
        """A bounded page of the events this token could have observed itself.

        Non-operators: only events of sessions this principal created, at
        levels up to its clearance — never another token's reads (even of the
        same agent), never operator actions. Operators: every session's events
        up to their clearance, operator actions at RESTRICTED.
        """
        principal = principal_of(request)
        q = read_query(request.query_params, AUDIT_QUERY)
        owner = None if principal.operator else principal.name
        events, more = await blocking(
            self.state.store.audit_page,
            q["limit"],
            Label(principal.clearance, principal.compartments),  # events within the token's own label
            q["lineage"],
            owner=owner,
            after=q["after"],
            before=q["before"],
        )
        return json_response(shapes.audit_page(events, more, forward=q["after"] is not None))

    @endpoint
    async def audit_verify(self, request: Request) -> Response:
        read_query(request.query_params, NO_QUERY)
        bad = await blocking(self.state.store.verify_audit)
        return json_response({"intact": True} if bad is None else {"intact": False, "first_bad_seq": bad})

    @endpoint
    async def tools(self, request: Request) -> Response:
        """Tool definitions for a model provider, as this token would be offered them."""
        principal = principal_of(request)
        q = read_query(request.query_params, TOOLS_QUERY)
        profile = q["profile"] or self.state.profile
        return json_response(
            {"tools": definitions(q["dialect"], profile, policy=self.state.policy_for(principal))}
        )

    @endpoint
    async def health(self, request: Request) -> Response:
        """Liveness and storage readiness; public, and says nothing about any memory."""
        read_query(request.query_params, NO_QUERY)
        try:
            await blocking(self.state.store.backend.session_record, "-health-probe-")
        except NotFound:
            pass  # the store answered: it is reachable
        return json_response({"status": "ok", "version": server_version()})
