"""The records the storage layer passes around: a session as stored, a memory as asked to be saved, and the
audit events a save or an import records (pure; every backend and the layers above share them)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..audit import AuditDraft, operator_draft
from ..levels import Level
from ..models import Memory

#: the id prefix of the session a CLI command opens for itself when none is named (the console hides them)
ONE_SHOT_PREFIX = "cli-once-"


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: str
    agent_id: str
    clearance: Level
    peers: tuple[str, ...]
    taint: Level
    created_at: datetime
    owner: str | None = None  # the server principal that created it; None: the operator (library, CLI)

    @property
    def agents(self) -> tuple[str, ...]:
        """Agents whose memories the session reads: its own first, then peers in order."""
        return (self.agent_id, *(p for p in self.peers if p != self.agent_id))

    @property
    def one_shot(self) -> bool:
        """Opened by one CLI command for itself, never resumed by name."""
        return self.id.startswith(ONE_SHOT_PREFIX)


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    key: str
    content: str
    tags: tuple[str, ...]
    category: str
    expires_at: datetime | None


def draft_memory(record: SessionRecord, draft: MemoryDraft, now: datetime) -> Memory:
    """What a save asks to store: the draft at the session's live taint, for its agent, with a fresh lineage."""
    return Memory(
        key=draft.key,
        content=draft.content,
        level=record.taint,
        tags=draft.tags,
        category=draft.category,
        agent_id=record.agent_id,
        session_id=record.id,
        created_at=now,
        updated_at=now,
        lineage_id=str(uuid.uuid4()),
        expires_at=draft.expires_at,
    )


def save_event(record: SessionRecord, stored: Memory) -> AuditDraft:
    """The audit event of one saved record (key, level, lineage; never content)."""
    return AuditDraft(
        "save", record.id, record.agent_id, record.taint, (stored.key,), (stored.level,), (stored.lineage_id,)
    )


def import_events(memories: Sequence[Memory]) -> list[AuditDraft]:
    """An import's events: one per record (agent, key, level, lineage; never content), then the summary.

    Import is an operator act, so every one is an operator event (no session, read as RESTRICTED).
    """
    per_record = [
        operator_draft(
            "import.record",
            agent_id=m.agent_id,
            keys=(m.key,),
            levels=(Level(m.level),),
            lineage_ids=(m.lineage_id,),
        )
        for m in memories
    ]
    summary = operator_draft(
        "import", detail={"count": len(memories)}, levels=tuple(sorted({Level(m.level) for m in memories}))
    )
    return [*per_record, summary]
