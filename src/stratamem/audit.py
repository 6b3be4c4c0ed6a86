"""The audit log's hash chain: how an event is hashed and how a chain is checked.

Pure functions over event fields, shared by every backend, so a log written
by one backend verifies the same after being copied to another.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .labels import level_of
from .levels import Level
from .models import AuditEvent

GENESIS = "0" * 64


@dataclass(frozen=True, slots=True)
class AuditDraft:
    """An event before the log gives it a sequence number and a place in the chain."""

    operation: str
    session_id: str | None = None
    agent_id: str | None = None
    taint: int = Level.PUBLIC  # a label as stored (stratamem.labels); a plain Level is its own label
    keys: tuple[str, ...] = ()
    levels: tuple[Level, ...] = ()
    lineage_ids: tuple[str, ...] = ()
    outcome: str = "ok"
    detail: dict[str, Any] = field(default_factory=dict)


def operator_draft(operation: str, **fields: Any) -> AuditDraft:
    """An operator action's event: no session, recorded at RESTRICTED.

    Operator actions (purge, export, import, migrate, changing a session's
    limits) cover every level and every agent, so their counts and targets are
    for operators with full clearance only. An event without a session is an
    operator event; readers treat it as RESTRICTED whatever level an older
    store recorded it at (``storage.audit_query``).
    """
    return AuditDraft(operation, session_id=None, taint=Level.RESTRICTED, **fields)


# One encoder for every hash: ``json.dumps`` with these options would build a new one per call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_hash(seq: int, time: datetime, draft_like: AuditEvent | AuditDraft, prev_hash: str) -> str:
    return _hash(seq, time.isoformat(), draft_like, prev_hash)


def _hash(seq: int, time_iso: str, draft_like: AuditEvent | AuditDraft, prev_hash: str) -> str:
    """SHA-256 of the event's canonical JSON (``_canonical_body``), written out field by field.

    The same text ``_CANONICAL.encode`` makes of that body (sorted keys, no spaces, strings through the
    encoder's own ``encode_basestring``), without building the dict and walking it for every event
    (``tests/test_single_save_path.py`` compares the two on arbitrary events).
    """
    text = (
        '{"agent":'
        + _string(draft_like.agent_id)
        + ',"detail":'
        + (_CANONICAL.encode(draft_like.detail) if draft_like.detail else "{}")
        + ',"keys":'
        + _strings(draft_like.keys)
        + ',"levels":'
        + _strings([_NAMES[lv] for lv in draft_like.levels])
        + ',"lineage":'
        + _strings(draft_like.lineage_ids)
        + ',"op":'
        + _encode_str(draft_like.operation)
        + ',"outcome":'
        + _encode_str(draft_like.outcome)
        + ',"prev":'
        + _encode_str(prev_hash)
        + ',"seq":'
        + int.__repr__(seq)
        + ',"session":'
        + _string(draft_like.session_id)
        + ',"taint":'
        + _encode_str(_taint_name(draft_like))
        + ',"time":'
        + _encode_str(time_iso)
        + "}"
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_encode_str = json.encoder.encode_basestring  # what the encoder uses for strings with ensure_ascii=False
_NAMES: dict[int, str] = {int(level): level.name for level in Level}  # Level is an IntEnum: it keys too


def _taint_name(draft_like: AuditEvent | AuditDraft) -> str:
    """The taint as hashed: the level's name, ``LEVEL+0x..`` (the compartment bits) for a label with any."""
    code = draft_like.taint_code if isinstance(draft_like, AuditEvent) else int(draft_like.taint)
    return _NAMES[code] if code in _NAMES else f"{_NAMES[code & 3]}+{code >> 2:#x}"


def _string(value: str | None) -> str:
    return "null" if value is None else _encode_str(value)


def _strings(values: Iterable[str]) -> str:
    return "[" + ",".join(map(_encode_str, values)) + "]"


def _canonical_body(seq: int, time_iso: str, draft_like: AuditEvent | AuditDraft, prev_hash: str) -> str:
    """The event's canonical JSON by the general encoder: what ``_hash`` hashes (kept as its reference)."""
    body = {
        "seq": seq,
        "time": time_iso,
        "session": draft_like.session_id,
        "agent": draft_like.agent_id,
        "taint": _taint_name(draft_like),
        "op": draft_like.operation,
        "keys": list(draft_like.keys),
        "levels": [Level(lv).name for lv in draft_like.levels],
        "lineage": list(draft_like.lineage_ids),
        "outcome": draft_like.outcome,
        "detail": draft_like.detail,
        "prev": prev_hash,
    }
    return _CANONICAL.encode(body)


def seal(seq: int, time: datetime, draft: AuditDraft, prev_hash: str) -> AuditEvent:
    return seal_many(seq, time, [draft], prev_hash)[0]


def seal_many(
    first_seq: int, time: datetime, drafts: Iterable[AuditDraft], prev_hash: str
) -> list[AuditEvent]:
    """Chain ``drafts`` in order from ``first_seq`` after ``prev_hash``, all at ``time`` (formatted once)."""
    time_iso = time.isoformat()
    events = []
    for seq, draft in enumerate(drafts, first_seq):
        digest = _hash(seq, time_iso, draft, prev_hash)
        events.append(
            AuditEvent(
                seq=seq,
                time=time,
                session_id=draft.session_id,
                agent_id=draft.agent_id,
                taint=level_of(draft.taint),
                taint_code=int(draft.taint),
                operation=draft.operation,
                keys=tuple(draft.keys),
                levels=tuple(Level(lv) for lv in draft.levels),
                lineage_ids=tuple(draft.lineage_ids),
                outcome=draft.outcome,
                detail=dict(draft.detail),
                prev_hash=prev_hash,
                hash=digest,
            )
        )
        prev_hash = digest
    return events


def first_bad_sequence(
    events: Iterable[AuditEvent], head: tuple[int, str] | None = None, anchor: tuple[int, str] | None = None
) -> int | None:
    """The first sequence number at which the chain is broken, or None when intact.

    Catches edited events (hash mismatch), deleted or reordered ones (sequence
    gap or a ``prev_hash`` that is not its predecessor's hash) and, given the
    recorded head, events cut off the end. The head lives in the store, so
    whoever cuts events can rewrite it too; an ``anchor`` (sequence, hash) kept
    outside the store catches that: the event at its sequence must exist and
    carry its hash (``audit_anchor.py``).
    """
    expected_seq = 1
    prev = GENESIS
    for event in events:
        if event.seq != expected_seq or event.prev_hash != prev:
            return expected_seq
        if event_hash(event.seq, event.time, event, event.prev_hash) != event.hash:
            return event.seq
        if anchor is not None and event.seq == anchor[0] and event.hash != anchor[1]:
            return event.seq  # a consistent chain, but not the one that was anchored: rewritten
        prev = event.hash
        expected_seq += 1
    if anchor is not None and anchor[0] >= expected_seq:
        return expected_seq  # events up to the anchor are gone, head or no head
    if head is not None:
        head_seq, head_hash = head
        if head_seq >= expected_seq:
            return expected_seq
        if head_seq == expected_seq - 1 and head_seq > 0 and head_hash != prev:
            return head_seq
    return None
