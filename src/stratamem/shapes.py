"""The JSON shapes users see, built from records by pure functions.

The agent tools, the CLI's ``--json`` output and the HTTP layer all print
these shapes (CONTRACT section 8), so they live in one place: a field renamed
here is renamed everywhere at once, and nothing else builds them by hand.

Each builder returns plain ``dict``/``list`` data; :func:`dumps` turns a shape
into the exact text handed to an agent. Times are ISO 8601 UTC, levels are
upper-case names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from .errors import StratamemError
from .levels import Level
from .models import AuditEvent, Hit, Memory
from .policy.redact import redact_secrets

ERROR_CODES = ("VALIDATION_ERROR", "NOT_FOUND", "POLICY_BLOCKED", "STORAGE_ERROR")
SCORE_DIGITS = 4


def classification(level: Level | int) -> str:
    """A level as users see it: its upper-case name."""
    return Level(level).name


def score(value: float) -> float:
    """Scores are rounded so equal rankings print equally on every platform."""
    return round(float(value), SCORE_DIGITS)


# memory records ---------------------------------------------------------------


def _shown(memory: Memory) -> dict[str, Any]:
    """What every answer shows of a memory first: key, content, classification, compartments (sorted,
    only when the record has any: a store without compartments answers exactly as before), tags."""
    shown: dict[str, Any] = {
        "key": memory.key,
        "content": memory.content,
        "classification": classification(memory.level),
    }
    if memory.compartments:
        shown["compartments"] = sorted(memory.compartments)
    shown["tags"] = list(memory.tags)
    return shown


def list_entry(memory: Memory) -> dict[str, Any]:
    """One element of ``memory_list``'s ``memories`` (and ``memory_get``'s answer)."""
    return {
        **_shown(memory),
        "updated_at": memory.updated_at.isoformat(),
        "occurred_at": memory.occurred_at.isoformat(),
    }


def search_entry(hit: Hit) -> dict[str, Any]:
    """One element of ``memory_search``'s ``results``."""
    memory = hit.memory
    return {
        **_shown(memory),
        "occurred_at": memory.occurred_at.isoformat(),
        "score": score(hit.score),
    }


def export_record(memory: Memory) -> dict[str, Any]:
    """A memory with its provenance, for exports an agent may read (no lineage ids)."""
    return {
        **_shown(memory),
        "category": memory.category,
        "agent_id": memory.agent_id,
        "session_id": memory.session_id,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "occurred_at": memory.occurred_at.isoformat(),
    }


# operation results --------------------------------------------------------------


def saved(memory: Memory) -> dict[str, Any]:
    shape: dict[str, Any] = {"saved": True, "key": memory.key, "classification": classification(memory.level)}
    if memory.compartments:
        shape["compartments"] = sorted(memory.compartments)
    return shape


def found(memory: Memory) -> dict[str, Any]:
    return {"found": True, **list_entry(memory)}


def not_found(key: str) -> dict[str, Any]:
    """The answer for a key that is missing *or* above the reader: the two must be identical."""
    return {"found": False, "key": key}


def got(key: str, memory: Memory | None) -> dict[str, Any]:
    """``memory_get``'s answer for ``key``."""
    return not_found(key) if memory is None else found(memory)


def search_results(hits: Iterable[Hit], query: str) -> dict[str, Any]:
    return {"results": [search_entry(h) for h in hits], "query": query}


def listing(memories: Iterable[Memory], next_cursor: str | None = None) -> dict[str, Any]:
    """``memory_list``'s page; ``next_cursor`` is ``null`` on the last page (see ``stratamem.paging``)."""
    return {"memories": [list_entry(m) for m in memories], "next_cursor": next_cursor}


def deleted(key: str) -> dict[str, Any]:
    return {"deleted": True, "key": key}


def audit_event(e: AuditEvent) -> dict[str, Any]:
    """One audit event as the CLI (`audit show --json`) and the HTTP API print it; never any content."""
    return {
        "seq": e.seq,
        "time": e.time.isoformat(),
        "session_id": e.session_id,
        "agent_id": e.agent_id,
        "taint": e.taint.name,
        "operation": e.operation,
        "keys": list(e.keys),
        "levels": [lv.name for lv in e.levels],
        "lineage_ids": list(e.lineage_ids),
        "outcome": e.outcome,
        "detail": e.detail,
        "hash": e.hash,
    }


def audit_page(events: Sequence[AuditEvent], more: bool, forward: bool) -> dict[str, Any]:
    """A bounded page of audit events; when ``more``, the cursor that continues it
    (``next_after`` paging forward, ``next_before`` paging back from the newest)."""
    shape: dict[str, Any] = {"events": [audit_event(e) for e in events], "more": more}
    if more and events:
        shape["next_after" if forward else "next_before"] = events[-1].seq if forward else events[0].seq
    return shape


# errors ---------------------------------------------------------------------------


def error(code: str, message: str) -> dict[str, Any]:
    """``{"error": {"code", "message"}}``; an unknown code is reported as STORAGE_ERROR.

    Messages may echo input (a key, a bad value), so credentials in them are masked.
    """
    return {
        "error": {
            "code": code if code in ERROR_CODES else "STORAGE_ERROR",
            "message": redact_secrets(message),
        }
    }


def error_from(exc: StratamemError) -> dict[str, Any]:
    return error(exc.code, exc.message)


def is_error(shape: object) -> bool:
    return isinstance(shape, dict) and set(shape) == {"error"}


# text -------------------------------------------------------------------------------


def dumps(shape: Any) -> str:
    """The exact text of a shape: compact, key order as built, UTF-8 safe.

    Non-ASCII stays readable (fewer tokens for the model); a lone surrogate
    (possible only in echoed input such as a query) becomes ``?`` so the text
    always encodes as UTF-8.
    """
    return printable(json.dumps(shape, ensure_ascii=False, separators=(", ", ": "), allow_nan=False))


def printable(text: str) -> str:
    """``text`` with any lone surrogate (echoed undecodable input) replaced by ``?``: always valid UTF-8."""
    return text.encode("utf-8", "replace").decode("utf-8")
