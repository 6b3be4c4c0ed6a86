"""``Idempotency-Key`` on REST writes: a retried request gets the first answer again, on any server.

A client that did not hear the answer to a write (a timeout, a server killed
behind the load balancer) retries it with the same ``Idempotency-Key`` header.
The first answer — status, headers, body — is kept in the store
(``storage/server_state.py``) under a digest of the principal and the key, so:

- same principal, same key, same request (method, path, query, body): the stored
  answer is replayed with ``Idempotent-Replayed: true``, and nothing runs again;
- same principal and key, another request: ``422 IDEMPOTENCY_KEY_REUSED``;
- another principal's identical key is another entry: one token never sees
  another's answer.

``POST /v1/console/open`` is left alone: its answer is a sign-in id, a
credential the store keeps only as a digest. Keys are 1 to 255 visible ASCII characters (``VALIDATION_ERROR`` otherwise) and
are kept ``ttl`` (``[server] idempotency_hours``, default 24); ``purge`` removes
expired ones. Answers of 5xx (nothing known to be done) and 401 are not kept, so
their retry runs again. Two identical requests in flight at the same moment are
not serialised: both run (a save is idempotent by itself; the later answer of the
pair is the one not kept).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from datetime import timedelta
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..storage import server_state
from ..storage.sql.rows import to_us
from .auth import PRINCIPAL_KEY
from .principals import Principal
from .responses import IDEMPOTENCY_KEY_REUSED, error_response
from .rest import MAX_BATCH_BODY_BYTES
from .state import ServerState, blocking

HEADER = "idempotency-key"
REPLAYED = "idempotent-replayed"
DEFAULT_TTL = timedelta(hours=24)
MAX_KEPT_ANSWER_BYTES = 8 * 1024 * 1024  # a larger answer is sent but not kept (its retry runs again)
KIND = "idempotency"
_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# answers that hold a credential (a console sign-in id, kept in the store only as a digest) are never kept
_NOT_KEPT = frozenset({"/v1/console/open"})


class Idempotency:
    """Pure ASGI middleware inside ``BearerAuth`` (it needs the principal) for writes under ``/v1/``."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = Headers(scope=scope).get(HEADER) if scope["type"] == "http" else None
        principal: Principal | None = scope.get(PRINCIPAL_KEY)
        if (
            key is None
            or principal is None
            or scope["method"] not in _WRITES
            or not scope.get("path", "").startswith("/v1/")
            or scope.get("path") in _NOT_KEPT
        ):
            await self.app(scope, receive, send)
            return
        if not _KEY.fullmatch(key):
            refusal = "Idempotency-Key must be 1 to 255 visible ASCII characters (no spaces)"
            await error_response("VALIDATION_ERROR", refusal)(scope, receive, send)
            return
        body = await _read_body(receive)
        if body is None:
            limit = f"a request with an Idempotency-Key has a body of at most {MAX_BATCH_BODY_BYTES} bytes"
            await error_response("VALIDATION_ERROR", limit, 413)(scope, receive, send)
            return
        request = _fingerprint(scope, body)
        store = self.state.store
        digest = server_state.digest(KIND, principal.name, key)
        entry = await blocking(server_state.get, store.backend, KIND, digest, store.now())
        if entry is not None:
            await _answer(entry.payload, request, scope, receive, send)
            return
        held = _Held(send)
        await self.app(scope, _replaying(body, receive), held)
        answer = held.answer()
        if answer is not None:
            status, headers, content = answer
            payload = {
                "request": request,
                "status": status,
                "headers": headers,
                "body": base64.b64encode(content).decode("ascii"),
            }
            now = store.now()
            expires = to_us(now + self.state.idempotency_ttl)
            kept = server_state.Entry(principal.name, json.dumps(payload), expires)
            await blocking(server_state.put, store.backend, KIND, digest, kept, now, replace=False)
        await held.release()


class _Held:
    """A ``send`` that holds the answer back until it is kept, so a retry can never outrun it.

    An answer larger than ``MAX_KEPT_ANSWER_BYTES`` is passed on as it comes and not kept.
    """

    def __init__(self, send: Send) -> None:
        self.send = send
        self.messages: list[Message] = []
        self.size = 0
        self.streaming = False

    async def __call__(self, message: Message) -> None:
        if self.streaming:
            await self.send(message)
            return
        self.messages.append(message)
        if message["type"] == "http.response.body":
            self.size += len(message.get("body", b""))
            if self.size > MAX_KEPT_ANSWER_BYTES:
                self.streaming = True
                await self.release()

    async def release(self) -> None:
        held, self.messages = self.messages, []
        for message in held:
            await self.send(message)

    def answer(self) -> tuple[int, list[list[str]], bytes] | None:
        """(status, headers, body) of a whole answer worth keeping, or None."""
        start = [m for m in self.messages if m["type"] == "http.response.start"]
        if self.streaming or not start:
            return None
        status = int(start[0]["status"])
        if status >= 500 or status == 401:
            return None  # nothing known to be done (or nobody known to ask): a retry runs again
        headers = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in start[0].get("headers", [])]
        body = b"".join(m.get("body", b"") for m in self.messages if m["type"] == "http.response.body")
        return status, headers, body


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None past the limit."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client left: what arrived is all there is
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BATCH_BODY_BYTES:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(parts)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body already read, then the client's own messages."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _fingerprint(scope: Scope, body: bytes) -> str:
    h = hashlib.sha256()
    for part in (
        scope["method"].encode(),
        scope.get("raw_path") or scope["path"].encode(),
        scope["query_string"],
    ):
        h.update(len(part).to_bytes(8, "big") + part)
    h.update(body)
    return h.hexdigest()


async def _answer(payload_text: str, request: str, scope: Scope, receive: Receive, send: Send) -> None:
    """The kept answer again, or the refusal of a key reused for another request."""
    payload: dict[str, Any] = json.loads(payload_text)
    if payload["request"] != request:
        message = "this Idempotency-Key was already used for a different request; use a new key"
        await error_response(IDEMPOTENCY_KEY_REUSED, message, 422)(scope, receive, send)
        return
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in payload["headers"]]
    headers.append((REPLAYED.encode(), b"true"))
    await send({"type": "http.response.start", "status": payload["status"], "headers": headers})
    await send({"type": "http.response.body", "body": base64.b64decode(payload["body"])})


def describe(document: dict[str, Any]) -> None:
    """Name the header and its refusal on every write of an OpenAPI ``document`` (in place)."""
    header = {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "pattern": "^[\\x21-\\x7e]{1,255}$"},
        "description": (
            "Retry safely: the first answer to this key (per token) is replayed, marked Idempotent-Replayed, "
            "on any server, for the server's idempotency_hours (default 24)"
        ),
    }
    reused = {
        "description": f"{IDEMPOTENCY_KEY_REUSED}: this Idempotency-Key was used for another request",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    for route, item in document["paths"].items():
        for method, operation in item.items():
            if route.startswith("/v1/") and route not in _NOT_KEPT and method.upper() in _WRITES:
                operation.setdefault("parameters", []).append(header)
                operation["responses"].setdefault("422", reused)
