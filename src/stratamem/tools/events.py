"""Observer events for memory tool calls, whichever transport ran them (in-process, MCP, REST).

The same scrubbed, bounded events as the turn layer (``turn.observe``),
delivered to the store's bus (``store.events``; OpenTelemetry spans when the
API is installed): one pair per call, ``ToolCallStarted`` then ``ToolCall``
with the same ``call_id`` (tool, origin, duration, success), plus
``MemoryStore`` for a write (key, category, backend) and ``MemoryRecall`` for
a search (scrubbed query summary, result count, duration). Events never carry
memory content — the turn layer summarises a call's arguments and errors with
the same functions (``summarize_arguments``, ``error_code``) — and emitting
them never fails a call.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..turn.observe import EventBus, MemoryRecall, MemoryStore, ToolCall, ToolCallStarted, emit, listening
from ..turn.scrub import summarize_query
from .specs import MCP_MEMORY, TOOLS

if TYPE_CHECKING:
    from ..session import Session
    from .specs import ToolSpec

_FOUND = re.compile(r"Found (\d+) memor")
WRITES = ("memory_save", "memory_store")
BATCH_WRITES = ("memory_save_many", "memory_store_many")  # one MemoryStore per item; items never in ToolCall
SEARCHES = ("memory_search", "memory_recall")


def backend_name(session: Session) -> str:
    name = type(session.store.backend).__name__.lower()
    if "markdown" in name:
        return "markdown"
    return "postgresql" if "postgres" in name else "sqlite" if "sqlite" in name else name


def _count(text: str) -> int:
    if text.startswith("{"):
        with contextlib.suppress(ValueError):
            data = json.loads(text)
            return len(data.get("results", [])) if isinstance(data, dict) else 0
    found = _FOUND.search(text)
    return int(found.group(1)) if found else 0


def event_arguments(spec: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
    """What a ``ToolCall`` event shows of the arguments: never what the call stores.

    Memory tools leave out ``content`` (a batch write's ``items`` show as their count). For graph tools
    the names, observations and notes are the stored content, so list and object arguments (entities,
    relations, observations...) show as their length and ``content``/``note`` are left out; scalar
    arguments (action, name, query, limit) stay, as ``key`` and ``query`` do for memory tools.
    An argument the tool does not declare shows as its shape only: nothing says what it carries.
    """
    declared = {k: v for k, v in args.items() if spec.param(k) is not None}
    undeclared = {k: value_shape(v) for k, v in args.items() if k not in declared}
    if spec.texts is None and spec.profile != MCP_MEMORY:
        batch = spec.name in BATCH_WRITES
        shown = {k: v for k, v in declared.items() if k != "content" and not (batch and k == "items")}
        items = args.get("items") if batch else None
        if isinstance(items, list):
            shown["items"] = len(items)  # a count: the items carry content
        return {**shown, **undeclared}
    shown = {
        k: len(v) if isinstance(v, list | tuple | dict) else v
        for k, v in declared.items()
        if k not in ("content", "note")
    }
    return {**shown, **undeclared}


def value_shape(value: object) -> str:
    """A value as its JSON type and size (``"string[12]"``, ``"array[3]"``, ``"number"``), not its content."""
    if isinstance(value, str):
        return f"string[{len(value)}]"
    if isinstance(value, Mapping):
        return f"object[{len(value)}]"
    if isinstance(value, list | tuple):
        return f"array[{len(value)}]"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else type(value).__name__


def summarize_arguments(tool_name: str, arguments: object) -> dict[str, Any]:
    """What any event shows of a call's arguments (a mapping, or JSON text as a model sends it).

    stratamem's own tools: ``event_arguments`` (keys, queries, counts; never content). Any other
    tool — a runtime's own, recorded in a turn — shows each argument's name and shape only: the
    model fills them from its prompt, memory context included, and events are not classified.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {"arguments": value_shape(arguments)}
    if not isinstance(arguments, Mapping):
        return {} if arguments is None else {"arguments": value_shape(arguments)}
    args = {str(k): v for k, v in arguments.items()}
    spec = TOOLS.get(tool_name)
    if spec is not None:
        return event_arguments(spec, args)
    return {k: value_shape(v) for k, v in args.items()}


def error_code(error: str | None) -> str:
    """An error as an event shows it: the code of a stratamem error shape, else only that there was one.

    A tool's error text is written by the tool (a runtime's own tool may echo what it was given), so
    only the stable code of ``{"error": {"code": ...}}`` is kept.
    """
    if not error:
        return ""
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        code = json.loads(error)["error"]["code"]
        if isinstance(code, str) and code.replace("_", "").isalnum():
            return code.lower()[:64]
    return "tool_error"


def new_call_id() -> str:
    """An id pairing a call's start and result events when the caller has none (MCP, REST, in-process)."""
    return f"call_{uuid.uuid4().hex[:16]}"


def emit_call_started(
    session: Session, spec: ToolSpec, arguments: Any, call_id: str, origin: str | None
) -> None:
    """The ``ToolCallStarted`` of a call ``tools.execute`` runs; never fails the call."""
    bus: EventBus | None = getattr(session.store, "events", None)
    if not listening(bus):
        return
    with contextlib.suppress(Exception):
        args = arguments if isinstance(arguments, dict) else {}
        emit(
            bus,
            ToolCallStarted(
                tool_name=spec.name,
                call_id=call_id,
                arguments=event_arguments(spec, args),
                origin=origin or "",
            ),
        )


def emit_tool_events(
    session: Session,
    spec: ToolSpec,
    arguments: Any,
    outcome: str,
    duration_ms: float,
    origin: str | None,
    text: str,
    call_id: str | None = None,
) -> None:
    """The events of a call's end: its ``ToolCall`` (unless ``call_id`` is None: the caller
    reports the pair, as a turn does) and the ``MemoryStore``/``MemoryRecall`` it caused."""
    bus: EventBus | None = getattr(session.store, "events", None)
    if not listening(bus):
        return
    with contextlib.suppress(Exception):
        args = arguments if isinstance(arguments, dict) else {}
        ok = outcome == "ok"
        items = args.get("items") if spec.name in BATCH_WRITES else None
        if call_id is not None:
            emit(
                bus,
                ToolCall(
                    tool_name=spec.name,
                    arguments=event_arguments(spec, args),
                    success=ok,
                    output_chars=len(text),
                    call_id=call_id,
                    duration_ms=round(duration_ms, 3),
                    origin=origin or "",
                    error="" if ok else outcome,
                ),
            )
        writes = [args] if spec.name in WRITES else items if isinstance(items, list) else []
        for write in writes:
            fields = write if isinstance(write, dict) else {}
            emit(
                bus,
                MemoryStore(
                    key=str(fields.get("key", ""))[:256],
                    category=str(fields.get("category") or "core"),
                    success=ok,
                    backend=backend_name(session),
                    origin=origin or "",
                    error="" if ok else outcome,
                ),
            )
        if spec.name in SEARCHES:
            query = args.get("query")
            emit(
                bus,
                MemoryRecall(
                    origin=origin or "",
                    entry_count=_count(text) if ok else 0,
                    success=ok,
                    query_summary=summarize_query(query if isinstance(query, str) else ""),
                    duration_ms=round(duration_ms, 3),
                    error="" if ok else outcome,
                ),
            )
