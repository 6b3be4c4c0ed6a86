"""OpenTelemetry spans for the work inside a request: policy, store and embedding.

Optional like the rest of stratamem's tracing (``turn/observe.py``): with
``opentelemetry-api`` importable and a tracer provider configured (the SDK, or
``opentelemetry-instrument``), each :func:`span` is a child of whatever span is
current — the server's request span (``server/http_observe.py``) — and without
either it costs one function call. Spans carry ids, counts, names of
operations and their durations only: never content, keys, tags or queries,
since a tracing backend is not classified storage.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

TRACER_NAME = "stratamem"
AttributeValue = str | bool | int | float

try:
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - the API is optional
    _trace = None  # type: ignore[assignment]

_provider: Any = None  # a provider given by ``use_provider`` (tests, embedders of the server)


def use_provider(provider: Any) -> None:
    """Record spans with ``provider`` instead of the global one (None: back to the global provider).

    Lets a test or an application hosting the server collect spans without setting OpenTelemetry's
    process-wide provider, which can be set only once.
    """
    global _provider
    _provider = provider


def tracer() -> Any:
    """The tracer spans are started on, or None without the OpenTelemetry API."""
    if _trace is None:
        return None
    if _provider is not None:
        return _provider.get_tracer(TRACER_NAME)
    return _trace.get_tracer(TRACER_NAME)


@contextlib.contextmanager
def span(
    name: str, attributes: Mapping[str, AttributeValue] | None = None, *, server: bool = False
) -> Iterator[Any]:
    """A child span of the current one named ``name`` (``stratamem.<part>``), or nothing without the API.

    ``attributes`` must be ids, counts or names of operations; the span is yielded so a caller can add
    a count it learns inside (``set_attribute``). ``server``: the span of a request received.
    """
    current = tracer()
    if current is None:
        yield None
        return
    kind = _trace.SpanKind.SERVER if server else _trace.SpanKind.INTERNAL
    with current.start_as_current_span(name, kind=kind, attributes=dict(attributes or {})) as opened:
        yield opened


def in_context(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn`` to run in another thread with this thread's context, so its spans keep their parent."""
    context = contextvars.copy_context()
    return lambda: context.run(fn)


__all__ = ["in_context", "span", "tracer", "use_provider"]
