"""``GET /metrics``: the server's Prometheus metrics, with no memory content, key or token in them.

What is counted, and by which labels (every label value comes from a closed
set, never from a request's data):

- requests and their latency by method, route *template*
  (``/v1/sessions/{session_id}/memories/{key}``, never the path: keys are user data) and status;
- tool calls and their latency by tool name (known tools only; any other name is ``other``) and
  outcome (``ok`` or the error code);
- store operations and their latency by protocol operation (``storage/timed.py``);
- at scrape time, read through the store's public functions: records waiting for their vector, the
  audit chain's length, worker processes and their restarts.

Agent names are labels only when the operator opts in (``[server] metrics_agents`` or
``STRATAMEM_METRICS_AGENTS``). Access: ``[server] metrics`` is ``auto`` (open when the server
listens on loopback, an operator token otherwise), ``open``, ``operator`` or ``off``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sized
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..policy.redact import scrubbed_logger
from ..storage import audit_store
from ..storage.timed import timed_backend
from .auth import bearer_token
from .observability import MetricsSettings
from .responses import error_response
from .state import ServerState, blocking
from .tool_workers import tool_label

logger = scrubbed_logger("stratamem.server")

# request latency buckets (seconds): a cached get is well under a millisecond, a big import takes seconds
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
OK = "ok"


def tool_outcome(answer: str | None) -> str:
    """``ok``, or the error code of a tool answer in the CONTRACT's error shape (a closed set)."""
    if answer is None:
        return "STORAGE_ERROR"
    if not answer.startswith('{"error"'):
        return OK
    try:
        code = json.loads(answer)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return OK  # a result whose first field happens to be named error
    return code if isinstance(code, str) and code.isupper() and len(code) <= 32 else "STORAGE_ERROR"


class _ScrapeTime(Collector):
    """Gauges read from the store when scraped: each one cheap (a count, the chain's tip) and bounded."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    def collect(self) -> Iterator[Any]:
        backend = self.state.store.backend
        pending = GaugeMetricFamily(
            "stratamem_pending_vectors", "memory versions waiting for their vector (search by meaning)"
        )
        audit = GaugeMetricFamily("stratamem_audit_chain_length", "events in the audit chain (its tip)")
        try:
            pending.add_metric([], backend.vectors.all_pending_vectors(0)[1])
            audit.add_metric([], audit_store.tip(backend)[0])
        except Exception:
            logger.warning("metrics: the store could not be read", exc_info=True)
        else:
            yield pending
            yield audit
        workers = self.state.workers
        count = GaugeMetricFamily("stratamem_worker_processes", "processes running the memory tool calls")
        count.add_metric([], len(workers) if isinstance(workers, Sized) else 0)
        yield count
        restarts = CounterMetricFamily(
            "stratamem_worker_restarts", "worker processes replaced after they died"
        )
        restarts.add_metric([], int(getattr(workers, "restarts", 0)))
        yield restarts


class ServerMetrics:
    """One server's metrics in a registry of its own (several apps in one process do not collide)."""

    def __init__(self, state: ServerState, settings: MetricsSettings, host: str) -> None:
        self.state = state
        self.settings = settings
        self.open = settings.open_to_anyone(host)
        self.registry = CollectorRegistry(auto_describe=True)
        agent = ("agent",) if settings.agents else ()
        r = self.registry

        def timing(name: str, text: str, labels: tuple[str, ...]) -> Histogram:
            return Histogram(name, text, labels, buckets=BUCKETS, registry=r)

        self.requests = Counter(
            "stratamem_http_requests",
            "HTTP requests answered",
            ("method", "route", "status", *agent),
            registry=r,
        )
        self.latency = timing(
            "stratamem_http_request_duration_seconds",
            "time to answer an HTTP request",
            ("method", "route", *agent),
        )
        self.tool_calls = Counter(
            "stratamem_tool_calls",
            "memory tool calls (REST and MCP)",
            ("tool", "outcome", *agent),
            registry=r,
        )
        self.tool_latency = timing(
            "stratamem_tool_call_duration_seconds", "time of a memory tool call", ("tool",)
        )
        self.store_latency = timing(
            "stratamem_store_operation_duration_seconds",
            "time of a store operation at the backend protocol boundary",
            ("operation",),
        )
        self.store_errors = Counter(
            "stratamem_store_operation_errors", "store operations that raised", ("operation",), registry=r
        )
        self._store_children: dict[str, Histogram] = {}
        r.register(_ScrapeTime(state))
        state.store.backend = timed_backend(state.store.backend, self.store_operation)
        worker_timings = getattr(state.workers, "store_observers", None)
        if isinstance(worker_timings, list):  # ``serve --workers``: the workers' operations too
            worker_timings.append(self.store_operation)
        state.metrics = self

    # observers -----------------------------------------------------------------------------------
    def request(self, method: str, route: str, status: int, seconds: float, agent: str | None) -> None:
        extra = (agent or "",) if self.settings.agents else ()
        self.requests.labels(method, route, str(status), *extra).inc()
        self.latency.labels(method, route, *extra).observe(seconds)

    def tool_call(self, tool: str, agent: str, seconds: float, answer: str | None) -> None:
        name = tool_label(tool)
        extra = (agent,) if self.settings.agents else ()
        self.tool_calls.labels(name, tool_outcome(answer), *extra).inc()
        self.tool_latency.labels(name).observe(seconds)

    def store_operation(self, operation: str, seconds: float, failed: bool) -> None:
        # the most frequent observation (several a request): its histogram child found once per operation
        child = self._store_children.get(operation)
        if child is None:
            child = self._store_children[operation] = self.store_latency.labels(operation)
        child.observe(seconds)
        if failed:
            self.store_errors.labels(operation).inc()

    # the endpoint ----------------------------------------------------------------------------------
    def _refused(self, request: Request) -> Response | None:
        if self.settings.access == "off":
            return error_response("NOT_FOUND", f"no such endpoint: {request.url.path}")
        if self.open:
            return None
        principal = self.state.principals.authenticate(bearer_token(request.headers))
        if principal is None:
            return error_response(
                "UNAUTHENTICATED", "/metrics needs an operator's bearer token off a loopback address", 401
            )
        if not principal.operator:
            return error_response("POLICY_BLOCKED", "/metrics needs an operator's token", 403)
        return None

    async def endpoint(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        body = await blocking(generate_latest, self.registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    def routes(self) -> list[Route]:
        return [Route("/metrics", self.endpoint, methods=["GET"])]


__all__ = ["ServerMetrics", "tool_outcome"]
