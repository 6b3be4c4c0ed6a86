"""JSON shapes the HTTP API adds to the tools' ones: sessions, taint events, audit events.

Memory operations answer with ``stratamem.shapes`` (through the tools); these
cover what only the runtime sees. Audit events use the same fields as
``stratamem --json audit show``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import shapes
from ..labels import Label, level_of
from ..models import TaintEvent
from ..storage.records import SessionRecord

#: the names of a stored label's compartments (``store.compartments.names_of``)
Names = Callable[[int], frozenset[str]]


def _label(code: int, names: Names) -> str:
    return Label(level_of(code), names(code) if code >= 4 else frozenset()).name


def labels(record: SessionRecord, names: Names | None) -> dict[str, Any]:
    """``label`` and ``clearance_label`` (``CONFIDENTIAL+HR``) of a session cleared for a compartment; nothing
    for any other, so a store without compartments shows every session as before."""
    if names is None or record.clearance_code < 4:
        return {}
    return {
        "label": _label(record.taint_code, names),
        "clearance_label": _label(record.clearance_code, names),
    }


def session(
    record: SessionRecord, history: Iterable[TaintEvent] | None = None, names: Names | None = None
) -> dict[str, Any]:
    """A session: ``names`` resolves its labels' compartments (see ``labels``; none without it)."""
    shape: dict[str, Any] = {
        "id": record.id,
        "agent_id": record.agent_id,
        "taint": record.taint.name,
        "clearance": record.clearance.name,
        **labels(record, names),
        "peers": list(record.peers),
        "created_at": record.created_at.isoformat(),
    }
    if history is not None:
        shape["taint_history"] = [taint_event(e, names) for e in history]
    return shape


def taint_event(event: TaintEvent, names: Names | None = None) -> dict[str, Any]:
    """A taint change; one that entered a compartment also names both labels (``previous_label``,
    ``new_label``), since its levels alone may not have changed."""
    shape: dict[str, Any] = {
        "time": event.time.isoformat(),
        "previous": event.previous.name,
        "new": event.new.name,
        "reason": event.reason,
        "source": event.source,
    }
    if names is not None and max(event.previous_code, event.new_code) >= 4:
        shape["previous_label"] = _label(event.previous_code, names)
        shape["new_label"] = _label(event.new_code, names)
    return shape


audit_event = shapes.audit_event
