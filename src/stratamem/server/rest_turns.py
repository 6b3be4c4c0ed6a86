"""The turn API under ``/v1/sessions/{id}``: a whole turn over HTTP (operations in ``turn_ops``).

    POST /turns                         begin: {user_message, origin?, system_prompt?, history_budget_tokens?}
                                        -> 201 {turn_id, state, messages, trim, pending_tool_calls}
    GET  /turns/{turn_id}/prompt        the prompt to send now (after tool results, say)
    POST /turns/{turn_id}/tool-calls    {tool_calls: [{id, name, arguments}], content?}
    POST /turns/{turn_id}/tool-results  {call_id, tool_name, output, success?, error?, duration_ms?}
    POST /turns/{turn_id}/usage         {model, input_tokens, output_tokens, cached_input_tokens?, cost_usd?}
                                        -> {usage, budget}
    POST /turns/{turn_id}/end           {content}
    GET  /transcript?start&limit&transcript_id   omitted (or any) history by range

Errors use the CONTRACT's shape; the turn's own codes keep their names and
statuses: LIMIT_EXCEEDED 413, TURN_STATE 409. Tool results may be large (up to
16 MiB of body; they are truncated to the operator's limits before storage).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import StratamemError
from ..turn.errors import TurnError
from ..turn.history import MAX_PAGE
from .auth import principal_of
from .query_params import MAX_POSITION, Count, Spec, Text, read_given
from .responses import from_exception, json_response
from .rest import guard, read_json
from .state import ServerState, blocking
from .turn_ops import MAX_OUTPUT_CHARS, MAX_SYSTEM_PROMPT_CHARS, TurnOps

TURN_STATUS = {"LIMIT_EXCEEDED": 413, "TURN_STATE": 409}
DEFAULT_BODY_BYTES = 4 * 1024 * 1024
TOOL_RESULT_BODY_BYTES = MAX_OUTPUT_CHARS + 64 * 1024


def turn_error(exc: StratamemError) -> Response:
    """The error as a body; turn codes keep their names (the tools' four codes are unchanged)."""
    if isinstance(exc, TurnError) and exc.code in TURN_STATUS:
        return json_response({"error": {"code": exc.code, "message": exc.message}}, TURN_STATUS[exc.code])
    return from_exception(exc)


guarded = guard(turn_error)

S = "/v1/sessions/{session_id}"
PROMPT_QUERY: Spec = {
    "system_prompt": Text(MAX_SYSTEM_PROMPT_CHARS),
    "history_budget_tokens": Count(0, MAX_POSITION),
}
TRANSCRIPT_QUERY: Spec = {
    "start": Count(0, MAX_POSITION, 0),
    "limit": Count(1, MAX_PAGE, 100),
    "transcript_id": Text(256),
}
#: the query parameters of every GET route, as the OpenAPI document names its paths
QUERIES: dict[str, Spec] = {
    f"{S}/turns/{{turn_id}}/prompt": PROMPT_QUERY,
    f"{S}/transcript": TRANSCRIPT_QUERY,
}


class TurnApi:
    def __init__(self, state: ServerState, ops: TurnOps | None = None) -> None:
        self.state = state
        self.ops = ops or TurnOps(state, getattr(state, "turn_settings", None))

    def routes(self) -> list[Route]:
        s = "/v1/sessions/{session_id}"
        t = f"{s}/turns/{{turn_id}}"
        return [
            Route(f"{s}/turns", self.begin, methods=["POST"]),
            Route(f"{t}/prompt", self.prompt, methods=["GET"]),
            Route(f"{t}/tool-calls", self.tool_calls, methods=["POST"]),
            Route(f"{t}/tool-results", self.tool_result, methods=["POST"]),
            Route(f"{t}/usage", self.usage, methods=["POST"]),
            Route(f"{t}/end", self.end, methods=["POST"]),
            Route(f"{s}/transcript", self.transcript, methods=["GET"]),
        ]

    async def _run(
        self,
        request: Request,
        op: Callable[..., dict[str, Any]],
        body: dict[str, Any],
        status: int = 200,
        with_turn: bool = True,
    ) -> Response:
        args = [principal_of(request), request.path_params["session_id"]]
        if with_turn:
            args.append(request.path_params["turn_id"])
        return json_response(await blocking(op, *args, body), status)

    @guarded
    async def begin(self, request: Request) -> Response:
        body = await read_json(request, DEFAULT_BODY_BYTES)
        return await self._run(request, self.ops.begin, body, 201, with_turn=False)

    @guarded
    async def prompt(self, request: Request) -> Response:
        return await self._run(request, self.ops.prompt, read_given(request.query_params, PROMPT_QUERY))

    @guarded
    async def tool_calls(self, request: Request) -> Response:
        return await self._run(request, self.ops.tool_calls, await read_json(request, DEFAULT_BODY_BYTES))

    @guarded
    async def tool_result(self, request: Request) -> Response:
        return await self._run(
            request, self.ops.tool_result, await read_json(request, TOOL_RESULT_BODY_BYTES)
        )

    @guarded
    async def usage(self, request: Request) -> Response:
        return await self._run(request, self.ops.usage, await read_json(request, DEFAULT_BODY_BYTES))

    @guarded
    async def end(self, request: Request) -> Response:
        return await self._run(request, self.ops.end, await read_json(request, DEFAULT_BODY_BYTES))

    @guarded
    async def transcript(self, request: Request) -> Response:
        return await self._run(
            request, self.ops.transcript, read_given(request.query_params, TRANSCRIPT_QUERY), with_turn=False
        )
