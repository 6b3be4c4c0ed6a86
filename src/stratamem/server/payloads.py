"""JSON shapes the HTTP API adds to the tools' ones: sessions, taint events, audit events.

Memory operations answer with ``stratamem.shapes`` (through the tools); these
cover what only the runtime sees. Audit events use the same fields as
``stratamem --json audit show``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import shapes
from ..models import TaintEvent
from ..storage.records import SessionRecord


def session(record: SessionRecord, history: Iterable[TaintEvent] | None = None) -> dict[str, Any]:
    shape: dict[str, Any] = {
        "id": record.id,
        "agent_id": record.agent_id,
        "taint": record.taint.name,
        "clearance": record.clearance.name,
        "peers": list(record.peers),
        "created_at": record.created_at.isoformat(),
    }
    if history is not None:
        shape["taint_history"] = [taint_event(e) for e in history]
    return shape


def taint_event(event: TaintEvent) -> dict[str, Any]:
    return {
        "time": event.time.isoformat(),
        "previous": event.previous.name,
        "new": event.new.name,
        "reason": event.reason,
        "source": event.source,
    }


audit_event = shapes.audit_event
