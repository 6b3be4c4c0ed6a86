"""HTTP responses in the CONTRACT's shapes, with the status code each error code maps to.

The body of an error is always ``{"error": {"code", "message"}}``; the status
says the same thing to HTTP tooling:

=================  ======
VALIDATION_ERROR   400
UNAUTHENTICATED    401 (HTTP only: no or unknown bearer token)
POLICY_BLOCKED     403
NOT_FOUND          404
STORAGE_ERROR      503 (500 when the failure was unexpected)
=================  ======
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from .. import shapes
from ..errors import StratamemError
from ..tools.executor import INTERNAL_ERROR

UNAUTHENTICATED = "UNAUTHENTICATED"
IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"  # an Idempotency-Key sent again with another request
HTTP_ONLY = frozenset({UNAUTHENTICATED, IDEMPOTENCY_KEY_REUSED})
STATUS = {
    "VALIDATION_ERROR": 400,
    UNAUTHENTICATED: 401,
    "POLICY_BLOCKED": 403,
    "NOT_FOUND": 404,
    IDEMPOTENCY_KEY_REUSED: 422,
    "STORAGE_ERROR": 503,
}
JSON = "application/json"


def json_text(text: str, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON body sent byte for byte as given (the tools' exact answer text)."""
    return Response(text.encode("utf-8"), status_code=status, media_type=JSON, headers=headers)


def json_response(shape: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return json_text(shapes.dumps(shape), status, headers)


def error_body(code: str, message: str) -> dict[str, Any]:
    """Like ``shapes.error`` but keeps the HTTP-only codes (``UNAUTHENTICATED``, ``IDEMPOTENCY_KEY_REUSED``)."""
    if code in HTTP_ONLY:
        return {"error": {"code": code, "message": message}}
    return shapes.error(code, message)


def error_status(code: str, message: str = "") -> int:
    if code == "STORAGE_ERROR" and message == INTERNAL_ERROR:
        return 500
    return STATUS.get(code, 500)


def error_response(
    code: str, message: str, status: int | None = None, headers: dict[str, str] | None = None
) -> Response:
    body = error_body(code, message)
    final_code = body["error"]["code"]
    return json_response(body, status or error_status(final_code, message), headers)


def from_exception(exc: StratamemError) -> Response:
    return error_response(exc.code, exc.message)


def unauthenticated(message: str = "a valid 'Authorization: Bearer <token>' header is required") -> Response:
    return error_response(UNAUTHENTICATED, message, headers={"WWW-Authenticate": 'Bearer realm="stratamem"'})


def internal_error() -> Response:
    return error_response("STORAGE_ERROR", INTERNAL_ERROR, 500)


def from_tool_text(text: str) -> Response:
    """A tool's answer as an HTTP response: the same bytes, with the status its shape implies.

    An error shape gets its code's status; ``{"found": false}`` from
    ``memory_get`` is sent with 404 (the body is still the tool's shape, so a
    missing key and an inaccessible one stay indistinguishable). The answer is
    parsed only when it names one of those keys: this runs on the event loop's
    thread, and a search answer is several kilobytes of JSON.
    """
    if '"error"' not in text and '"found"' not in text:
        return json_text(text)  # neither key anywhere: an ordinary answer (no need to parse it here)
    status = 200
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if shapes.is_error(data):
        status = error_status(data["error"]["code"], data["error"]["message"])
    elif isinstance(data, dict) and data.get("found") is False:
        status = 404
    return json_text(text, status)
