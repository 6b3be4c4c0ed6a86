"""Typed turn events, their observers, and optional OpenTelemetry spans.

Events are scrubbed and bounded *when they are built*, not when they are
delivered: an event that exists is safe to hand to any observer, log or
tracing backend, so no delivery path can forget to scrub.

OpenTelemetry is optional.  When ``opentelemetry-api`` is importable the bus
also records each event as a zero-length span; without it (or without a
configured SDK, in which case the API's tracer is a no-op) nothing changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol, TypeVar

from ..policy.redact import scrubbed_logger
from .scrub import DEFAULT_MAX_CHARS, bound_text, scrub_within

__all__ = [
    "Event",
    "EventBus",
    "EventLog",
    "HistoryTrimmed",
    "MemoryRecall",
    "MemoryStore",
    "Observer",
    "PolicyDecision",
    "ToolCall",
    "ToolCallStarted",
    "emit",
    "error_summary",
    "event_attributes",
    "opentelemetry_tracer",
]

_log = scrubbed_logger(__name__)

AttributeValue = str | bool | int | float
_E = TypeVar("_E", bound="Event")


class Event:
    """Base of all turn events: scrubs and bounds every text field on creation."""

    __slots__ = ()
    name: ClassVar[str] = "stratamem.event"
    max_field_chars: ClassVar[int] = DEFAULT_MAX_CHARS

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, str | Mapping | list | tuple):
                object.__setattr__(self, f.name, _safe_text(value, self.max_field_chars))


def _safe_text(value: str | Mapping[str, Any] | Sequence[Any], max_chars: int) -> str:
    scrubbed = scrub_within(value, max_chars)
    text = scrubbed if isinstance(scrubbed, str) else json.dumps(scrubbed, ensure_ascii=False, default=str)
    return bound_text(text, max_chars)


@dataclass(frozen=True, slots=True)
class MemoryRecall(Event):
    """One memory-context render: how many entries went into the prompt."""

    name: ClassVar[str] = "stratamem.memory.recall"
    origin: str
    entry_count: int
    success: bool
    suppressed: bool = False
    error: str = ""
    query_summary: str = ""  # scrubbed and cut short (scrub.summarize_query)
    found: int = 0  # hits the store returned (conversation scope applied), before policy
    withheld: int = 0  # dropped by policy
    duration_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class MemoryStore(Event):
    """One memory write attempted by the turn layer (e.g. an autosave)."""

    name: ClassVar[str] = "stratamem.memory.store"
    key: str
    category: str
    success: bool
    error: str = ""
    backend: str = ""
    origin: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallStarted(Event):
    """A tool call asked for (by a model in a turn) or begun (``tools.execute``).

    Its result is the :class:`ToolCall` with the same ``call_id``: one pair
    per call. ``arguments`` is a summary (``tools.events.summarize_arguments``),
    never the values a call stores or a runtime's tool receives.
    """

    name: ClassVar[str] = "stratamem.tool.call.started"
    tool_name: str
    call_id: str
    arguments: str | Mapping[str, Any] = ""
    origin: str = ""


@dataclass(frozen=True, slots=True)
class ToolCall(Event):
    """One tool result; ``call_id`` pairs it with its :class:`ToolCallStarted`.

    Every path in the package fills ``arguments`` with a summary
    (``tools.events.summarize_arguments``) and ``error`` with a code, never
    with text a tool or the model wrote: events are not classified, so they
    must not carry memory content.
    """

    name: ClassVar[str] = "stratamem.tool.call"
    tool_name: str
    arguments: str | Mapping[str, Any]
    success: bool
    output_chars: int = 0
    truncated: bool = False
    call_id: str = ""
    error: str = ""
    duration_ms: float = 0.0
    origin: str = ""


@dataclass(frozen=True, slots=True)
class HistoryTrimmed(Event):
    """History was cut to fit the token budget; the transcript still has it all."""

    name: ClassVar[str] = "stratamem.history.trimmed"
    session_id: str
    messages_dropped: int
    turns_dropped: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class PolicyDecision(Event):
    """A workspace (or other) policy allowed or refused an operation."""

    name: ClassVar[str] = "stratamem.policy.decision"
    action: str
    target: str
    allowed: bool
    reason: str = ""
    agent_id: str = ""


Observer = Callable[[Event], None]


class SpanLike(Protocol):
    def end(self) -> None: ...


class TracerLike(Protocol):
    def start_span(self, name: str, *, attributes: Mapping[str, AttributeValue]) -> SpanLike: ...


def opentelemetry_tracer() -> TracerLike | None:
    """The OpenTelemetry tracer for this package, or None when the API is absent."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer("stratamem.turn")


def event_attributes(event: Event) -> dict[str, AttributeValue]:
    """Flatten an event into span attributes (all values are primitives)."""
    attrs: dict[str, AttributeValue] = {}
    for f in fields(event):  # type: ignore[arg-type]
        value = getattr(event, f.name)
        attrs[f"stratamem.{f.name}"] = value if isinstance(value, str | bool | int | float) else str(value)
    return attrs


_AUTO: Any = object()


class EventBus:
    """Delivers events to observers; a failing observer never fails the turn."""

    def __init__(self, observers: Iterable[Observer] = (), *, tracer: TracerLike | None = _AUTO) -> None:
        self._observers: list[Observer] = list(observers)
        self._tracer = opentelemetry_tracer() if tracer is _AUTO else tracer
        self._auto_tracer = tracer is _AUTO  # a tracer given by the caller is assumed to record

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Register ``observer``; returns a function that unregisters it."""
        self._observers.append(observer)

        def unsubscribe() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return unsubscribe

    @property
    def listening(self) -> bool:
        """Whether an event would reach anyone: an observer, or a tracer that records spans.

        Hot paths ask before building an event, since building one scrubs every
        text field; with the OpenTelemetry API but no SDK configured, spans are
        not recorded, so nothing would be lost.
        """
        if self._observers:
            return True
        return self._tracer is not None and (not self._auto_tracer or _tracing_configured())

    def emit(self, event: Event) -> None:
        for observer in tuple(self._observers):
            try:
                observer(event)
            except Exception:  # noqa: BLE001 - a caller's observer must not break the turn
                _log.warning("observer %r failed on %s", observer, event.name, exc_info=True)
        if self._tracer is not None:
            try:
                self._tracer.start_span(event.name, attributes=event_attributes(event)).end()
            except Exception:  # noqa: BLE001 - a tracing backend's failure must not break the turn
                _log.warning("tracing failed on %s", event.name, exc_info=True)


class EventLog:
    """An observer that keeps the events it sees, for tests and debugging."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, kind: type[_E]) -> list[_E]:
        return [e for e in self.events if isinstance(e, kind)]


def _tracing_configured() -> bool:
    """False while OpenTelemetry has no tracer provider set (its spans are then no-ops)."""
    try:
        from opentelemetry import trace
    except ImportError:  # pragma: no cover - a custom tracer without the API: assume it records
        return True
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def listening(bus: EventBus | None) -> bool:
    """``bus.listening`` for an optional bus (custom buses without the property always listen)."""
    return bus is not None and getattr(bus, "listening", True)


def error_summary(exc: BaseException) -> str:
    """An exception as an event shows it: its type and stable code, not its message.

    A message may quote what failed (a rule's text, a row, a tool's output); events are not
    classified, so they carry only what names the failure.
    """
    code = getattr(exc, "code", None)
    return f"{type(exc).__name__} ({code})" if isinstance(code, str) else type(exc).__name__


def emit(bus: EventBus | None, event: Event) -> None:
    """Emit on ``bus`` if there is one; lets every API take an optional bus."""
    if bus is not None:
        bus.emit(event)
