"""Immutable records handed to callers.

They are plain frozen dataclasses so results can be compared, hashed and
serialised without touching storage again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .labels import Label
from .levels import Level


@dataclass(frozen=True, slots=True)
class Memory:
    key: str
    content: str
    level: Level
    tags: tuple[str, ...]
    category: str
    agent_id: str
    session_id: str | None
    created_at: datetime
    updated_at: datetime
    lineage_id: str
    expires_at: datetime | None = None
    #: when the thing the memory tells of happened (aware UTC); None given: ``created_at``
    occurred_at: datetime = None  # type: ignore[assignment]  # filled in by __post_init__
    #: the compartments of the record's label (``stratamem.labels``); empty in a store without any
    compartments: frozenset[str] = frozenset()
    #: the label as stored (level | compartment bits << 2); -1 given: the level alone
    label_code: int = -1

    def __post_init__(self) -> None:
        if self.occurred_at is None:
            object.__setattr__(self, "occurred_at", self.created_at)
        if self.label_code < 0:
            object.__setattr__(self, "label_code", int(self.level))

    @property
    def label(self) -> Label:
        return Label(self.level, self.compartments)

    def to_dict(self) -> dict[str, Any]:
        """Every field, levels by name and times in ISO 8601 — the export line format."""
        return {
            "key": self.key,
            "content": self.content,
            "level": self.level.name,
            "tags": list(self.tags),
            "category": self.category,
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "lineage_id": self.lineage_id,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "occurred_at": self.occurred_at.isoformat(),
        } | ({"compartments": sorted(self.compartments)} if self.compartments else {})


@dataclass(frozen=True, slots=True)
class SituatedMemory(Memory):
    """A memory with the ``context`` stored beside it (short text that situates it: the previous turn of a
    conversation, a document's title), as written and as exported.

    Only the write paths, export/import and dump see one: ``context`` shapes the memory's embedding but is
    never returned as content, so get, list and search hand out plain ``Memory`` records.
    """

    context: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The export line: every field of ``Memory`` plus the context when there is one."""
        line = Memory.to_dict(self)
        if self.context is not None:
            line["context"] = self.context
        return line


def situated(memory: Memory, context: str | None) -> Memory:
    """``memory`` with the context stored beside it (export, import, restore paths), plain when there is none."""
    if context is None:
        return memory
    fields = {name: getattr(memory, name) for name in Memory.__dataclass_fields__}
    return SituatedMemory(**fields, context=context)


def context_of(memory: Memory) -> str | None:
    """The context stored with a memory being written or exported (None for a plain record)."""
    return memory.context if isinstance(memory, SituatedMemory) else None


@dataclass(frozen=True, slots=True)
class Hit:
    memory: Memory
    score: float


@dataclass(frozen=True, slots=True)
class TaintEvent:
    time: datetime
    previous: Level
    new: Level
    reason: str
    source: str | None
    #: the labels as stored (``stratamem.labels``); -1 given: the levels alone
    previous_code: int = -1
    new_code: int = -1


@dataclass(frozen=True, slots=True)
class AuditEvent:
    seq: int
    time: datetime
    session_id: str | None
    agent_id: str | None
    taint: Level
    operation: str
    keys: tuple[str, ...] = ()
    levels: tuple[Level, ...] = ()
    lineage_ids: tuple[str, ...] = ()
    outcome: str = "ok"
    detail: dict[str, Any] = field(default_factory=dict)
    prev_hash: str = ""
    hash: str = ""
    #: the taint's label as stored (``stratamem.labels``); -1 given: the level alone
    taint_code: int = -1

    def __post_init__(self) -> None:
        if self.taint_code < 0:
            object.__setattr__(self, "taint_code", int(self.taint))


class PurgeResult(int):
    """What ``Store.purge`` returns: the number of records purged (an ``int``, as before), plus whether
    their bytes have left the store's files yet.

    Purge never waits long for other readers: when one still holds a snapshot
    that needs the old pages (SQLite) or row versions (PostgreSQL), the rows
    are gone from every read at once but their bytes stay in the files until
    that reader finishes; ``erased`` is then False and ``remaining`` says what
    still holds them and how to finish (run purge again, with any cutoff, once
    that reader is done: it finishes an earlier purge's erasure).
    """

    erased: bool
    remaining: str

    def __new__(cls, count: int, erased: bool = True, remaining: str = "") -> PurgeResult:
        result = super().__new__(cls, count)
        result.erased = erased
        result.remaining = remaining
        return result

    def __repr__(self) -> str:
        return f"PurgeResult({int(self)}, erased={self.erased})"
