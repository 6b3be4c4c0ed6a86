"""An operator's view of a store at one clearance: what the console shows, bounded, audited.

The console is an operator tool, so it reads across agents; but like a
session it is opened at a clearance and never returns, counts or orders by
anything above it (the queries in ``storage/sql/console.py`` take the
clearance and apply it in SQL, on both backends). Opening the view and every
read it makes append an audit event at the view's clearance, naming the
operator; the events carry keys, levels and lineage ids, never content.

Searches and deletes do not bypass the session path: they run in a real
session of the agent concerned, raised to the clearance (or to the record's
level for a delete) with an audited escalation whose source names the
operator, so ranking, shadowing, the policy gate and the audit are the same
as an agent's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from .audit import AuditDraft
from .errors import NotFound, PolicyBlocked, ValidationError
from .labels import Label
from .levels import Level
from .models import Memory
from .scope import ALL
from .session import Session
from .storage.protocol import T
from .storage.sql import console
from .storage.sql.console import (
    AgentSummary,
    AuditRow,
    ConsoleRecord,
    Lineage,
    MemoryQuery,
    Runner,
    SessionSummary,
)
from .storage.sql.dialect import Dialect
from .validation import check_agent_id, check_key

if TYPE_CHECKING:
    from .store import Store

EXPORT_PAGE = console.MAX_PAGE


@dataclass(frozen=True, slots=True)
class PlaygroundHit:
    """A search hit with its score and the query terms (stemmed) that it matched."""

    memory: Memory
    score: float
    matched: tuple[str, ...]


class OperatorView:
    """The store as an operator sees it at ``clearance``; construct with :meth:`open`."""

    def __init__(self, store: Store, clearance: Level | Label | str, actor: str) -> None:
        self.store = store
        #: the view's clearance label ("RESTRICTED+HR": compartments the operator is cleared for), its
        #: level and its code as storage keeps labels (the console's SQL tests rows against the code)
        self.label = Label.parse(clearance)
        self.clearance = self.label.level
        self.clearance_code = (
            store.compartments.encode(self.label) if self.label.compartments else int(self.clearance)
        )
        self.actor = actor
        self._sessions: dict[tuple[str, Level], str] = {}

    @classmethod
    def open(cls, store: Store, clearance: Level | Label | str, actor: str) -> OperatorView:
        """Open a view; the opening itself is audited at the chosen clearance."""
        view = cls(store, clearance, actor)
        view._audit("console.open", None, (), detail={"clearance": view.label.name})
        return view

    # audit --------------------------------------------------------------------
    def _audit(self, op: str, agent: str | None, memories: Sequence[Memory], **detail: Any) -> None:
        extra = detail.pop("detail", {})
        self.store.audit(
            AuditDraft(
                op,
                None,
                agent,
                self.clearance_code,
                tuple(m.key for m in memories),
                tuple(m.level for m in memories),
                tuple(m.lineage_id for m in memories),
                detail={"by": self.actor, **extra, **detail},
            )
        )

    def _read(self, reader: Callable[[Runner, Dialect], T]) -> T:
        # one operator snapshot that may see every row (the queries apply the clearance); a read appends
        # nothing, so its time is only the context's
        return self.store.backend.transactions.operator(
            datetime.now(UTC), console.read_body(reader), read_only=True
        )

    def _named(self, records: list[ConsoleRecord]) -> list[ConsoleRecord]:
        """Records with their label's compartment names (rows know only the stored code)."""
        named = self.store.compartments.named
        return [replace(r, memory=named(r.memory)) for r in records]

    # reads --------------------------------------------------------------------
    def agents(self, after: str | None = None, limit: int = 100) -> list[AgentSummary]:
        now = self.store.now()
        found = self._read(lambda run, d: console.agents(run, d, self.clearance_code, after, limit, now))
        self._audit("console.agents", None, (), count=len(found))
        return found

    def memories(self, query: MemoryQuery) -> list[ConsoleRecord]:
        if query.clearance != self.clearance_code:
            raise ValidationError("the query's clearance differs from the view's")
        if query.status not in console.STATUSES:
            raise ValidationError(f"status must be one of {', '.join(console.STATUSES)}")
        now = self.store.now()
        found = self._named(self._read(lambda run, d: console.memories(run, d, query, now)))
        self._audit("console.memories", query.agent_id, [r.memory for r in found], count=len(found))
        return found

    def query(self, agent_id: str, **filters: Any) -> MemoryQuery:
        return MemoryQuery(self.clearance_code, check_agent_id(agent_id), **filters)

    def versions(self, agent_id: str, key: str) -> list[ConsoleRecord]:
        agent, key = check_agent_id(agent_id), check_key(key)
        now = self.store.now()
        found = self._named(
            self._read(lambda run, d: console.versions(run, d, self.clearance_code, agent, key, now))
        )
        self._audit("console.versions", agent, [r.memory for r in found], count=len(found))
        return found

    def record(self, ref: int) -> ConsoleRecord:
        """One version by ref; NOT_FOUND when missing or above the clearance (indistinguishable)."""
        now = self.store.now()
        if (
            not isinstance(ref, int) or not 0 < ref < 2**63
        ):  # no row has such an id; SQL integers stop at 2**63
            raise NotFound(f"no record {ref} within {self.label.name}")
        found = self._read(lambda run, d: console.record(run, d, self.clearance_code, ref, now))
        found = None if found is None else self._named([found])[0]
        if found is None:
            raise NotFound(f"no record {ref} within {self.label.name}")
        self._audit("console.record", found.memory.agent_id, [found.memory])
        return found

    def lineage(
        self, ref: int, before: int | None = None, limit: int = 50, operator_reads: bool = False
    ) -> tuple[ConsoleRecord, Lineage]:
        """A record and the audit events that name its lineage id (reads and writes), newest first.

        The console's own reads of it are counted, and listed only with ``operator_reads``.
        """
        found = self.record(ref)
        page = self._read(
            lambda run, d: console.lineage(
                run, d, self.clearance_code, found.memory.lineage_id, before, limit, operator_reads
            )
        )
        return found, page

    def sessions(
        self,
        agent_id: str | None = None,
        after: tuple[int, str] | None = None,
        limit: int = 50,
        one_shot: bool = True,
    ) -> list[SessionSummary]:
        """A page of sessions within the clearance, newest first; ``one_shot=False`` hides the sessions a
        CLI command opened for itself (``SessionRecord.one_shot``)."""
        agent = check_agent_id(agent_id) if agent_id is not None else None
        found = self._read(
            lambda run, d: console.sessions(run, d, self.clearance_code, agent, after, limit, one_shot)
        )
        self._audit("console.sessions", agent, (), count=len(found), one_shot=one_shot)
        return found

    def audit_log(self, before: int | None = None, limit: int = 50) -> list[AuditRow]:
        """The newest audit events the operator may read at the clearance (operator events need RESTRICTED)."""
        rows = self._read(lambda run, d: console.audit(run, d, self.clearance_code, before, limit))
        self._audit("console.audit", None, (), count=len(rows))
        return rows

    def verify(self) -> int | None:
        bad = self.store.verify_audit()
        self._audit("console.verify", None, (), intact=bad is None)
        return bad

    # a real session of an agent, raised by the operator -------------------------
    def session_at(self, agent_id: str, level: Level) -> Session:
        """A session of ``agent_id`` at taint ``level`` (<= the clearance), opened and raised on the record."""
        agent = check_agent_id(agent_id)
        if level > self.clearance:
            raise PolicyBlocked(f"{level.name} is above this console's clearance {self.clearance.name}")
        cached = self._sessions.get((agent, level))
        if cached is not None:
            return Session(self.store, cached)
        session = self.store.session(agent, clearance=level, compartments=self.label.compartments)
        reason, source = f"operator console opened at {self.label.name}", f"console:{self.actor}"
        if level > Level.PUBLIC:
            session.escalate(level, reason, source=source)
        for name in sorted(self.label.compartments):
            session.enter(name, reason, source=source)
        self._sessions[(agent, level)] = session.id
        return session

    def search(self, agent_id: str, query: str, max_results: int = 10) -> list[PlaygroundHit]:
        """Search as ``agent_id`` would at the console's clearance, with the matched terms of each hit.

        The console is the operator's audited view, not an agent's read: it sees every conversation's
        ``conversation`` memories the clearance allows (``scope.ALL``), where an agent's session sees
        its own conversation's only.
        """
        if not isinstance(query, str):
            raise ValidationError("query must be a string")
        session = self.session_at(agent_id, self.clearance)
        hits = session.search(query, max_results, conversations=ALL)
        analyzer = self.store.analyzer
        wanted = set(analyzer.query_terms(query[:10_000])) if query.strip() not in ("", "*") else set()
        out = []
        for hit in hits:
            terms, _ = analyzer.document_terms(hit.memory.key, hit.memory.content, hit.memory.tags)
            out.append(PlaygroundHit(hit.memory, hit.score, tuple(sorted(wanted & set(terms)))))
        return out

    # operator actions ---------------------------------------------------------
    def restore(self, ref: int) -> Memory:
        if not isinstance(ref, int) or not 0 < ref < 2**63:
            raise NotFound(f"no soft-deleted record {ref} within {self.label.name}")
        return self.store.backend.restore_deleted(ref, self.clearance, self.actor, self.store.now())

    def purge(self, before: datetime, agent_id: str | None = None) -> int:
        """Hard-delete old soft-deleted/expired records; it touches every level, so it needs RESTRICTED."""
        if self.clearance != Level.RESTRICTED:
            raise PolicyBlocked(
                "purge removes records of every level; open the console at RESTRICTED to purge"
            )
        agent = check_agent_id(agent_id) if agent_id is not None else None
        return self.store.purge(before, agent)

    def export(self, agent_id: str) -> Iterator[Memory]:
        """Every live version of one agent within the clearance, a page at a time; audited with its count."""
        query = self.query(agent_id, status="live", limit=EXPORT_PAGE)
        now = self.store.now()
        count = 0
        try:
            while True:
                page = self._named(
                    self._read(partial(console.memories, q=query, now=now))
                )  # this page's query
                for record in page:
                    count += 1
                    yield record.memory
                if len(page) < EXPORT_PAGE:
                    return
                last = page[-1]
                query = self.query(
                    agent_id,
                    status="live",
                    limit=EXPORT_PAGE,
                    after=(last.memory.key, last.memory.label_code, last.ref),
                )
        finally:
            self._audit("console.export", query.agent_id, (), count=count)
