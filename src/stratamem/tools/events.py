"""Observer events for memory tool calls, whichever transport ran them (in-process, MCP, REST).

The same scrubbed, bounded events as the turn layer (``turn.observe``),
delivered to the store's bus (``store.events``; OpenTelemetry spans when the
API is installed): one ``ToolCall`` per call (tool, origin, duration,
success), plus ``MemoryStore`` for a write (key, category, backend) and
``MemoryRecall`` for a search (scrubbed query summary, result count,
duration). Events never carry memory content, and emitting them never fails
a call.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import TYPE_CHECKING, Any

from ..turn.observe import MemoryRecall, MemoryStore, ToolCall, emit
from ..turn.recall import summarize_query
from .specs import MCP_MEMORY

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
    """
    if spec.texts is None and spec.profile != MCP_MEMORY:
        batch = spec.name in BATCH_WRITES
        shown = {k: v for k, v in args.items() if k != "content" and not (batch and k == "items")}
        items = args.get("items") if batch else None
        if isinstance(items, list):
            shown["items"] = len(items)  # a count: the items carry content
        return shown
    return {
        k: len(v) if isinstance(v, list | tuple | dict) else v
        for k, v in args.items()
        if k not in ("content", "note")
    }


def emit_tool_events(
    session: Session,
    spec: ToolSpec,
    arguments: Any,
    outcome: str,
    duration_ms: float,
    origin: str | None,
    text: str,
) -> None:
    bus = getattr(session.store, "events", None)
    if bus is None:
        return
    with contextlib.suppress(Exception):
        args = arguments if isinstance(arguments, dict) else {}
        ok = outcome == "ok"
        items = args.get("items") if spec.name in BATCH_WRITES else None
        emit(
            bus,
            ToolCall(
                tool_name=spec.name,
                arguments=event_arguments(spec, args),
                success=ok,
                output_chars=len(text),
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
