"""MCP messages read by the strict JSON reader before the SDK parses them, over HTTP and stdio.

The SDK parses JSON-RPC itself (``pydantic_core.from_json``): a repeated key keeps its last value and
``NaN`` is a number, so a tool call's arguments could mean something other than what a REST body or an
import with the same text is refused for. Every message is first read with ``strict_json.read_json``;
a refused one never reaches the SDK and is answered with a JSON-RPC parse error whose message is the
reader's (``request body: not valid JSON at line 1 column 40: duplicate key 'key'``) and whose
``data`` is the REST error body (``{"error": {"code": "VALIDATION_ERROR", ...}}``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import PARSE_ERROR, ErrorData, JSONRPCError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ValidationError
from ..strict_json import JsonRefused, read_json

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # as a REST batch body: an MCP message can carry memory_save_many


def _request_id(raw: bytes) -> str | int | None:
    """The id of a refused request when a lenient reading finds one (so the client can match the error)."""
    try:
        data = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    ident = data.get("id") if isinstance(data, dict) else None
    return ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None


def refusal(raw: bytes, error: ValidationError) -> JSONRPCError:
    """The JSON-RPC answer to a message the strict reader refused."""
    return JSONRPCError(
        jsonrpc="2.0",
        id=_request_id(raw),
        error=ErrorData(code=PARSE_ERROR, message=error.message, data=error.to_dict()),
    )


def check_message(raw: bytes, source: str) -> ValidationError | None:
    """Why the strict reader refuses ``raw`` (located at ``source``), or None when it reads."""
    try:
        read_json(raw, max_bytes=MAX_MESSAGE_BYTES)
    except JsonRefused as exc:
        return exc.located(source)
    return None


class StrictBodies:
    """ASGI wrapper of an MCP endpoint: a POST body is read whole and checked, then replayed to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_MESSAGE_BYTES:
                too_large = ValidationError(f"request body: larger than {MAX_MESSAGE_BYTES} bytes")
                await self._refuse(b"", too_large, 413, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        error = check_message(raw, "request body") if raw.strip() else None
        if error is not None:
            await self._refuse(raw, error, 400, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": raw, "more_body": False}

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(raw: bytes, error: ValidationError, status: int, send: Send) -> None:
        body = refusal(raw, error).model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class StrictLines:
    """stdin for the SDK's stdio transport: each line checked first; a refused one is answered, not passed on.

    Lines are read as bytes and decoded strictly (the SDK's own stdin replaces invalid UTF-8).
    ``answer_to`` is the transport's write stream, set once the transport is open. ``on_line`` is told of
    every line read (the idle embedder waits while messages arrive).
    """

    def __init__(self, binary: IO[bytes], on_line: Callable[[], None] | None = None) -> None:
        self.binary = binary
        self.on_line = on_line
        self.answers: Any = None
        self.ready = anyio.Event()

    def answer_to(self, write_stream: Any) -> None:
        self.answers = write_stream
        self.ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for raw in anyio.wrap_file(self.binary):
            if self.on_line is not None:
                self.on_line()
            if not raw.strip():
                continue
            error = check_message(raw, "message")
            if error is None:
                yield raw.decode("utf-8-sig")
                continue
            await self.ready.wait()
            await self.answers.send(SessionMessage(refusal(raw, error)))
