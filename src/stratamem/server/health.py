"""``GET /v1/health/ready``: may this server take traffic? Each check named, 503 when one fails.

Liveness (``/v1/health``, in ``rest``) says the process answers; readiness says
it can do its work:

- ``database``: a trivial read through the store answered;
- ``migrations``: the schema version the store records is the one this code writes
  (another release may have migrated it since this server opened it);
- ``model``: with search by meaning, the embedder is loaded (in this process, or in the worker
  processes, which load it before they report ready); a lexical store needs none.

Public like liveness: the answer names checks and versions, nothing about any memory. A failing
check says only that it failed; the cause goes to the server's log.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import NotFound
from ..policy.redact import scrubbed_logger
from ..storage.schema_status import schema_versions
from .query_params import read_query
from .responses import json_response
from .state import ServerState, blocking

logger = scrubbed_logger("stratamem.server")

PROBE_SESSION = "-health-probe-"


def _database(state: ServerState) -> dict[str, Any]:
    try:
        state.store.backend.session_record(PROBE_SESSION)
    except NotFound:
        pass  # the store answered
    except Exception:
        logger.warning("readiness: the database is not reachable", exc_info=True)
        return {"ok": False, "detail": "not reachable"}
    return {"ok": True, "detail": "reachable"}


def _migrations(state: ServerState) -> dict[str, Any]:
    try:
        recorded, expected = schema_versions(state.store.backend)
    except Exception:
        logger.warning("readiness: the schema version could not be read", exc_info=True)
        return {"ok": False, "detail": "schema version unreadable"}
    detail = "current" if recorded == expected else "not current"
    return {"ok": recorded == expected, "detail": detail, "recorded": recorded, "expected": expected}


def _model(state: ServerState) -> dict[str, Any]:
    semantic = state.store.semantic
    if semantic.mode == "lexical":
        return {"ok": True, "detail": "not used (lexical search)"}
    if state.workers is not None:
        return {"ok": True, "detail": "loaded in the worker processes"}
    if semantic.loaded:
        return {"ok": True, "detail": "loaded"}
    return {"ok": False, "detail": "not loaded"}


def readiness(state: ServerState) -> dict[str, Any]:
    """Blocking: every check's result, and ``ready`` when all passed."""
    checks = {"database": _database(state)}
    checks["migrations"] = (
        _migrations(state) if checks["database"]["ok"] else {"ok": False, "detail": "skipped"}
    )
    checks["model"] = _model(state)
    ready = all(check["ok"] for check in checks.values())
    return {"status": "ready" if ready else "not ready", "checks": checks}


class Health:
    """The readiness route of one server."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    async def ready(self, request: Request) -> Response:
        read_query(request.query_params, {})
        shape = await blocking(readiness, self.state)
        return json_response(shape, 200 if shape["status"] == "ready" else 503)

    def routes(self) -> list[Route]:
        return [Route("/v1/health/ready", self.ready, methods=["GET"])]


__all__ = ["Health", "readiness"]
