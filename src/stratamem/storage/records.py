"""The records the storage layer passes around: a session as stored, a memory as asked to be saved, a search
as asked of a backend, and the audit events a save or an import records (pure; every backend and the layers
above share them)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..audit import AuditDraft, operator_draft
from ..levels import Level
from ..models import Hit, Memory, SituatedMemory
from ..scope import OWN, Conversations

if TYPE_CHECKING:
    from .vectors import QueryVector

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
    #: the clearance and taint labels as storage keeps them (``stratamem.labels``: level | compartment bits
    #: << 2); -1 given: the level alone. Every write stores ``taint_code``; reads test labels against it.
    clearance_code: int = -1
    taint_code: int = -1

    def __post_init__(self) -> None:
        if self.clearance_code < 0:
            object.__setattr__(self, "clearance_code", int(self.clearance))
        if self.taint_code < 0:
            object.__setattr__(self, "taint_code", int(self.taint))

    @property
    def agents(self) -> tuple[str, ...]:
        """Agents whose memories the session reads: its own first, then peers in order."""
        return (self.agent_id, *(p for p in self.peers if p != self.agent_id))

    @property
    def one_shot(self) -> bool:
        """Opened by one CLI command for itself, never resumed by name."""
        return self.id.startswith(ONE_SHOT_PREFIX)


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """A session as asked for: opened anew, or resumed when ``session_id`` names one that exists.

    ``clearance`` and ``peers``: the new session's limits (None: RESTRICTED, no peers), or what a
    resume asks to keep (None: whatever it has). ``owner``: the server principal asking (None: the
    operator).
    """

    agent_id: str
    session_id: str | None = None
    clearance: Level | None = None
    peers: Sequence[str] | None = None
    owner: str | None = None
    #: the new session's cleared compartments as label bits (``stratamem.labels``); 0: none
    compartments: int = 0


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """A save as validated: ``occurred_at`` None means the save's own time (a new version happens now),
    ``context`` None means none (an update without one clears the old)."""

    key: str
    content: str
    tags: tuple[str, ...]
    category: str
    expires_at: datetime | None
    occurred_at: datetime | None = None
    context: str | None = None


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search as a session asks it of a backend, in one value so every backend's signature is short.

    ``terms``: the analysed query; None asks for the most recently updated memories, an empty
    sequence (a query of punctuation only) matches nothing. ``query``: the query's vector for
    ``semantic``/``hybrid`` (None: lexical). ``conversations``: the read's conversation scope
    (``stratamem.scope``), part of the visible view. ``weights``: each term's weight in the
    query (query expansion's terms weigh less than the question's own); None: every term 1.
    """

    terms: Sequence[str] | None
    limit: int
    mode: str = "lexical"
    query: QueryVector | None = None
    conversations: Conversations = OWN
    weights: Mapping[str, float] | None = None

    def detail(self, hits: Sequence[Hit]) -> dict[str, Any]:
        """The ``search`` audit event's detail: counts and the mode, never the query."""
        detail: dict[str, Any] = {"results": len(hits), "terms": len(self.terms or ())}
        if self.mode != "lexical":
            detail["mode"] = self.mode
        return detail


def draft_memory(record: SessionRecord, draft: MemoryDraft, now: datetime) -> SituatedMemory:
    """What a save asks to store: the draft at the session's live taint, for its agent, with a fresh lineage."""
    return SituatedMemory(
        key=draft.key,
        content=draft.content,
        level=record.taint,
        label_code=record.taint_code,
        tags=draft.tags,
        category=draft.category,
        agent_id=record.agent_id,
        session_id=record.id,
        created_at=now,
        updated_at=now,
        lineage_id=str(uuid.uuid4()),
        expires_at=draft.expires_at,
        occurred_at=draft.occurred_at or now,
        context=draft.context,
    )


def save_event(record: SessionRecord, stored: Memory) -> AuditDraft:
    """The audit event of one saved record (key, level, lineage; never content)."""
    return AuditDraft(
        "save",
        record.id,
        record.agent_id,
        record.taint_code,
        (stored.key,),
        (stored.level,),
        (stored.lineage_id,),
    )


def session_event(
    op: str, record: SessionRecord, named: Iterable[tuple[str, Level, str]], detail: dict[str, Any]
) -> AuditDraft:
    """A session's event at its taint naming records by (key or name, level, lineage or id), never content."""
    rows = list(named)
    keys, levels, ids = (tuple(r[0] for r in rows), tuple(r[1] for r in rows), tuple(r[2] for r in rows))
    return AuditDraft(op, record.id, record.agent_id, record.taint_code, keys, levels, ids, detail=detail)


def read_event(
    op: str, record: SessionRecord, memories: Sequence[Memory], detail: dict[str, Any]
) -> AuditDraft:
    """The audit event of a session's read: the keys, levels and lineages it returned."""
    return session_event(op, record, ((m.key, m.level, m.lineage_id) for m in memories), detail)


def purge_event(agent_id: str | None, purged: int, before: datetime) -> AuditDraft:
    """A purge's operator event: how many records left the store, and the cutoff."""
    return operator_draft("purge", agent_id=agent_id, detail={"purged": purged, "before": before.isoformat()})


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
