"""The backend protocol boundary, timed: one place measures every store operation on any backend.

:func:`timed_backend` wraps a :class:`~.protocol.Backend` so each protocol
call — a method of the backend itself, or of its ``transactions``, ``graph``
and ``vectors`` seams — runs inside a ``stratamem.store`` span and reports its
name and duration to the given observers (the server's latency histogram).
Nothing else is recorded: the arguments (keys, content, queries) never leave
the call. The wrapper is transparent: every other attribute is the backend's
own, so code that reads ``store.backend`` sees no difference.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from .. import tracing
from .protocol import Backend

#: observer(operation, seconds, failed)
Observer = Callable[[str, float, bool], None]

#: the protocol's operations, by the object they are called on
OPERATIONS = frozenset(
    {
        "open_session",
        "session_record",
        "escalate",
        "save_many",
        "get",
        "list",
        "search",
        "delete",
        "purge",
        "export",
        "import_memories",
        "restore_deleted",
        "declassify",
        "dump",
        "restore",
    }
)
SEAMS: dict[str, frozenset[str]] = {
    "transactions": frozenset({"read", "write", "operator", "append_audit"}),
    "graph": frozenset({"read", "write", "operator"}),
    "vectors": frozenset({"use_embedder", "pending_vectors", "all_pending_vectors", "store_vectors"}),
}


def _timed(fn: Callable[..., Any], operation: str, observers: list[Observer]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        failed = True
        try:
            with tracing.span("stratamem.store", {"stratamem.operation": operation}):
                result = fn(*args, **kwargs)
            failed = False
            return result
        finally:
            elapsed = time.perf_counter() - started
            for observe in observers:
                observe(operation, elapsed, failed)

    return call


class _TimedSeam:
    """One seam of the backend with its operations timed (a fresh one per access: seams may be too)."""

    def __init__(self, inner: Any, name: str, observers: list[Observer]) -> None:
        self._inner = inner
        self._name = name
        self._observers = observers

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._inner, attr)
        if attr in SEAMS[self._name] and callable(value):
            return _timed(value, f"{self._name}.{attr}", self._observers)
        return value


class TimedBackend:
    """A backend whose protocol calls are timed; everything else passes through unchanged."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.observers: list[Observer] = []

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self.inner, attr)
        if attr in SEAMS:
            return _TimedSeam(value, attr, self.observers)
        if attr in OPERATIONS and callable(value):
            timed = _timed(value, attr, self.observers)
            self.__dict__[attr] = timed  # found directly from now on: the backend's methods do not change
            return timed
        return value


def timed_backend(backend: Backend, observer: Observer) -> Backend:
    """``backend`` timed, with ``observer`` told of every operation (a timed backend gains one more)."""
    timed = backend if isinstance(backend, TimedBackend) else TimedBackend(backend)
    assert isinstance(timed, TimedBackend)
    timed.observers.append(observer)
    return cast(Backend, timed)


__all__ = ["OPERATIONS", "SEAMS", "Observer", "TimedBackend", "timed_backend"]
