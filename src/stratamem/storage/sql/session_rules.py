"""What opening, resuming and re-limiting a session may do: the rules both backends apply.

A session's clearance and peers are the operator's word when the session is
created, and they stay fixed: resuming a session (``Store.session(session_id=...)``,
``stratamem --session ID``, ``stratamem mcp --session ID``) keeps them, and a
resume that asks for different ones is refused with ``ClearanceError``
(POLICY_BLOCKED, exit code 4) rather than silently widening them — or
silently narrowing them under another process that shares the session.
Changing them is an explicit operator action, ``Store.set_session_limits``
(``stratamem session set``), recorded as an operator audit event.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...audit import AuditDraft, operator_draft
from ...errors import ClearanceError, NotFound, ValidationError
from ...levels import Level
from ..records import SessionRecord

DEFAULT_CLEARANCE = Level.RESTRICTED


def new_limits(clearance: Level | None, peers: Sequence[str] | None) -> tuple[Level, tuple[str, ...]]:
    """The limits of a session being created: what was asked, else RESTRICTED and no peers."""
    return (DEFAULT_CLEARANCE if clearance is None else clearance), tuple(peers or ())


def check_resume(
    stored: SessionRecord,
    agent_id: str,
    clearance: Level | None,
    peers: Sequence[str] | None,
    owner: str | None,
) -> None:
    """Refuse a resume that names another agent or owner, or other limits than the session's own."""
    if owner is not None and stored.owner != owner:
        raise NotFound(f"no session {stored.id!r}")
    if stored.agent_id != agent_id:
        raise ValidationError(f"session {stored.id!r} belongs to another agent")
    asked = []
    if clearance is not None and clearance != stored.clearance:
        asked.append(f"clearance {clearance.name} (it has {stored.clearance.name})")
    if peers is not None and set(peers) != set(stored.peers):
        asked.append(f"peers {list(peers)} (it has {list(stored.peers)})")
    if asked:
        raise ClearanceError(
            f"session {stored.id!r} keeps the clearance and peers it was created with; this resume asked for "
            + " and ".join(asked)
            + ". An operator changes them with `stratamem session set` (Store.set_session_limits)"
        )


def opened_draft(op: str, record: SessionRecord) -> AuditDraft:
    detail = {"clearance": record.clearance.name, "peers": list(record.peers)}
    if record.owner is not None:
        detail["owner"] = record.owner
    return AuditDraft(op, record.id, record.agent_id, record.taint_code, detail=detail)


def changed_limits(
    stored: SessionRecord, clearance: Level | None, peers: Sequence[str] | None
) -> tuple[Level, tuple[str, ...]]:
    """The session's limits after an operator's change; refused if the taint is already above them."""
    new_clearance = stored.clearance if clearance is None else clearance
    new_peers = stored.peers if peers is None else tuple(peers)
    if stored.taint > new_clearance:
        raise ClearanceError(
            f"session {stored.id!r} is tainted {stored.taint.name}, above the clearance {new_clearance.name}; "
            "reset it to continue at a lower level"
        )
    return new_clearance, new_peers


def limits_draft(before: SessionRecord, after: SessionRecord) -> AuditDraft:
    """The operator event of a limits change (session-less, so only operators read it)."""
    return operator_draft(
        "session.limits",
        agent_id=after.agent_id,
        detail={
            "session": after.id,
            "clearance": after.clearance.name,
            "peers": list(after.peers),
            "previous": {"clearance": before.clearance.name, "peers": list(before.peers)},
        },
    )
