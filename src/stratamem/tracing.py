"""OpenTelemetry spans for the work inside a request: policy, store and embedding.

Optional like the rest of stratamem's tracing (``turn/observe.py``): with
``opentelemetry-api`` importable and a tracer provider configured (the SDK, or
``opentelemetry-instrument``), each :func:`span` is a child of whatever span is
current — the server's request span (``server/http_observe.py``) — and without
either it costs a function call and a type check. Spans carry ids, counts, names of
operations and their durations only: never content, keys, tags or queries,
since a tracing backend is not classified storage.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

TRACER_NAME = "stratamem"
AttributeValue = str | bool | int | float

try:
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - the API is optional
    _trace = None  # type: ignore[assignment]

_provider: Any = None  # a provider given by ``use_provider`` (tests, embedders of the server)
_cached: tuple[Any, Any] | None = None  # (provider, its tracer)
_global: Any = None  # OpenTelemetry's process-wide provider, once set
_next_check = 0.0
RECHECK_S = 1.0


def use_provider(provider: Any) -> None:
    """Record spans with ``provider`` instead of the global one (None: back to the global provider).

    Lets a test or an application hosting the server collect spans without setting OpenTelemetry's
    process-wide provider, which can be set only once.
    """
    global _provider
    _provider = provider


def _global_provider() -> Any:
    """OpenTelemetry's process-wide provider once one is set (it can be set only once, so it is kept);
    looked for again at most every ``RECHECK_S`` while there is none (the lookup reads the environment)."""
    global _global, _next_check
    if _global is None and time.monotonic() >= _next_check:
        _next_check = time.monotonic() + RECHECK_S
        found = _trace.get_tracer_provider()
        if not isinstance(found, _trace.ProxyTracerProvider | _trace.NoOpTracerProvider):
            _global = found
    return _global


def tracer() -> Any:
    """The tracer spans are started on, or None when nothing would record them.

    None without the API, and while OpenTelemetry has no provider configured: its default spans are
    no-ops, yet starting one costs tens of microseconds, and a request starts a few dozen.
    """
    global _cached
    if _trace is None:
        return None
    provider = _provider if _provider is not None else _global_provider()
    if provider is None:
        return None
    if _cached is None or _cached[0] is not provider:
        _cached = (provider, provider.get_tracer(TRACER_NAME))
    return _cached[1]


_NO_SPAN: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()  # reusable: yields None


def span(
    name: str, attributes: Mapping[str, AttributeValue] | None = None, *, server: bool = False
) -> contextlib.AbstractContextManager[Any]:
    """A child span of the current one named ``name`` (``stratamem.<part>``), or nothing when untraced.

    ``attributes`` must be ids, counts or names of operations; the span (None when untraced) is what
    ``with`` gives, so a caller can add what it learns inside (``set_attribute``). ``server``: the span
    of a request received.
    """
    current = tracer()
    if current is None:
        return _NO_SPAN
    kind = _trace.SpanKind.SERVER if server else _trace.SpanKind.INTERNAL
    return current.start_as_current_span(name, kind=kind, attributes=dict(attributes or {}))  # type: ignore[no-any-return]


def in_context(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn`` to run in another thread with this thread's context, so its spans keep their parent."""
    context = contextvars.copy_context()
    return lambda: context.run(fn)


__all__ = ["in_context", "span", "tracer", "use_provider"]
