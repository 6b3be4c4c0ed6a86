"""Who touched a memory: its lineage, read back from the audit log.

Every get, search and list records the lineage ids it returned, and every
save and delete the one it changed, so a memory's history is just the audit
events naming its lineage id. The asker sees what ``Store.audit_events``
lets it see (``storage.audit_query``): events whose level its clearance
covers (CONTRACT section 7) and, when it asks as a server principal
(``owner``), only its own sessions' events.

A read here means "returned by the store to that session". The tool layer
may still withhold a returned record from the model (quarantine), so this is
an upper bound on what a model saw — the safe direction for an audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from ..levels import Level
from ..models import AuditEvent

if TYPE_CHECKING:
    from ..store import Store

READ_OPERATIONS = frozenset({"get", "search", "list", "policy.decision"})
WRITE_OPERATIONS = frozenset({"save", "delete", "import"})


@dataclass(frozen=True, slots=True)
class Access:
    """One event in a memory's lineage."""

    seq: int
    time: datetime
    operation: str
    session_id: str | None
    agent_id: str | None
    taint: Level
    outcome: str

    @classmethod
    def from_event(cls, event: AuditEvent) -> Access:
        return cls(
            event.seq,
            event.time,
            event.operation,
            event.session_id,
            event.agent_id,
            event.taint,
            event.outcome,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time": self.time.isoformat(),
            "operation": self.operation,
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "taint": self.taint.name,
            "outcome": self.outcome,
        }


class LineageQuery(TypedDict, total=False):
    """Who asks and how much: ``owner``, a server principal, sees only its own sessions' events;
    ``limit`` keeps the newest ``limit`` events (a busy memory is read often)."""

    owner: str | None
    limit: int | None


def history(
    store: Store, lineage_id: str, clearance: Level | str = Level.RESTRICTED, **query: Unpack[LineageQuery]
) -> list[Access]:
    """Every audited event naming ``lineage_id`` (writes, reads, context injections), oldest first."""
    return [Access.from_event(e) for e in store.audit_events(clearance, lineage_id, **query)]


def readers(
    store: Store, lineage_id: str, clearance: Level | str = Level.RESTRICTED, **query: Unpack[LineageQuery]
) -> list[Access]:
    """The reads of a memory: which session and agent, when, at what taint.

    Reads are get/search/list results and ``policy.decision`` events that
    injected the memory into a prompt (PRE_CONTEXT_INJECTION).
    """
    return _only(READ_OPERATIONS, history(store, lineage_id, clearance, **query))


def writers(
    store: Store, lineage_id: str, clearance: Level | str = Level.RESTRICTED, **query: Unpack[LineageQuery]
) -> list[Access]:
    """The saves and deletes of a memory."""
    return _only(WRITE_OPERATIONS, history(store, lineage_id, clearance, **query))


def _only(operations: frozenset[str], accesses: list[Access]) -> list[Access]:
    return [a for a in accesses if a.operation in operations]
