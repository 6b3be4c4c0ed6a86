"""JSON shapes of the console API, and its paging cursors.

Memory fields go out as JSON strings only; the page renders them with
``textContent``. List entries carry at most ``PREVIEW_CHARS`` of content (the
record endpoint has all of it), so a page of 64 KiB memories stays small.
Cursors are opaque to the page: base64url of a small JSON array, checked on
the way back in.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from ..errors import ValidationError
from ..models import Memory
from ..operator import PlaygroundHit
from ..storage.sql.console import AgentSummary, AuditRow, ConsoleRecord, Lineage, SessionSummary
from ..storage.sql.rows import to_us
from . import payloads

PREVIEW_CHARS = 400


def encode_cursor(parts: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode().rstrip("=")


def decode_cursor(text: str | None, kinds: tuple[type, ...]) -> tuple[Any, ...] | None:
    """A cursor back to its parts, checked against ``kinds``; VALIDATION_ERROR when it is not one of ours."""
    if text is None or text == "":
        return None
    try:
        parts = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ValidationError("after is not the next cursor of a previous page") from None
    if (
        not isinstance(parts, list)
        or len(parts) != len(kinds)
        or not all(isinstance(p, k) and not isinstance(p, bool) for p, k in zip(parts, kinds, strict=True))
    ):
        raise ValidationError("after is not the next cursor of a previous page")
    return tuple(parts)


def _label(m: Memory) -> dict[str, Any]:
    """A compartmented record's ``label`` (``CONFIDENTIAL+HR``) and ``compartments``; nothing for any other,
    so a store without compartments answers as before."""
    return {"label": m.label.name, "compartments": sorted(m.compartments)} if m.compartments else {}


def memory(m: Memory, full: bool = True) -> dict[str, Any]:
    content = m.content if full else m.content[:PREVIEW_CHARS]
    return {
        "key": m.key,
        "content": content,
        "content_chars": len(m.content),
        "truncated": len(content) < len(m.content),
        "level": m.level.name,
        **_label(m),
        "tags": list(m.tags),
        "category": m.category,
        "agent_id": m.agent_id,
        "session_id": m.session_id,
        "created_at": m.created_at.isoformat(),
        "updated_at": m.updated_at.isoformat(),
        "lineage_id": m.lineage_id,
        "expires_at": m.expires_at.isoformat() if m.expires_at else None,
    }


def record(r: ConsoleRecord, full: bool = False) -> dict[str, Any]:
    return {
        "ref": r.ref,
        "state": r.state,
        "deleted_at": r.deleted_at.isoformat() if r.deleted_at else None,
        **memory(r.memory, full),
    }


def records_page(found: list[ConsoleRecord], limit: int) -> dict[str, Any]:
    last = found[-1] if len(found) >= limit else None
    nxt = encode_cursor([last.memory.key, last.memory.label_code, last.ref]) if last else None
    return {"records": [record(r) for r in found], "next": nxt}


def agent(a: AgentSummary) -> dict[str, Any]:
    return {"agent_id": a.agent_id, "live": a.live, "deleted": a.deleted, "expired": a.expired}


def session(s: SessionSummary, names: payloads.Names | None = None) -> dict[str, Any]:
    """A session with its taint history; ``one_shot``: a CLI command opened it for itself."""
    return {**payloads.session(s.record, s.history, names), "one_shot": s.record.one_shot}


def sessions_page(
    found: list[SessionSummary], limit: int, names: payloads.Names | None = None
) -> dict[str, Any]:
    """A page of sessions; ``names`` (``store.compartments.names_of``) shows their labels."""
    last = found[-1].record if len(found) >= limit else None
    nxt = encode_cursor([to_us(last.created_at), last.id]) if last else None
    return {"sessions": [session(s, names) for s in found], "next": nxt}


def audit_row(row: AuditRow) -> dict[str, Any]:
    if row.event is None:
        return {"seq": row.seq, "unreadable": True}
    return payloads.audit_event(row.event)


def audit_page(rows: list[AuditRow], limit: int) -> dict[str, Any]:
    nxt = rows[-1].seq if len(rows) >= limit else None
    return {"events": [audit_row(r) for r in rows], "next": nxt}


def lineage(page: Lineage, limit: int, shown: bool) -> dict[str, Any]:
    """A lineage page; ``console_reads`` says how many of the console's own reads name the record."""
    reads = {"count": page.operator_reads, "capped": page.capped, "shown": shown}
    return {**audit_page(page.events, limit), "console_reads": reads}


def hit(h: PlaygroundHit) -> dict[str, Any]:
    return {"score": round(h.score, 4), "matched": list(h.matched), **memory(h.memory, full=False)}
