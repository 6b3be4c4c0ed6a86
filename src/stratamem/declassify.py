"""Declassification: the operator act that moves a record's content down the label lattice, and the only way
anything ever moves down.

Every save is stored at exactly its session's taint, so content never flows to a lower label on its own. An
operator may decide that a record (or a redacted text of it) may be known at a lower label: ``declassify``
writes a NEW version at that label with the same lineage id, keeping the original at its own, and records who,
why, from, to and the hash of the content written in the audit chain. With the two-person rule
(``require_approval``) the act is a request that a different operator approves before it expires; an
approval that comes too late, twice, or from the one who asked writes nothing.
The SQL is ``storage/sql/declassification.py``; this module checks the input and speaks in labels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .audit import AuditDraft
from .errors import NotFound, PolicyBlocked, ValidationError
from .labels import Label
from .levels import Level
from .models import Memory
from .storage.records import SessionRecord
from .storage.sql import declassification as sql
from .validation import check_agent_id, check_content, check_id, check_key, check_text

if TYPE_CHECKING:
    from .store import Store

#: how long a pending request may be approved, unless the store says otherwise
DEFAULT_APPROVAL_TTL = timedelta(hours=24)
#: the most characters a reason may have (it is kept in the audit chain)
MAX_REASON_CHARS = 200
#: the most register rows one page holds
MAX_PAGE = 500


@dataclass(frozen=True, slots=True)
class Ask:
    """A declassification as the operator asked for it, before any check (``Store.declassify``'s arguments)."""

    agent_id: str
    key: str
    from_label: Label | str
    to_label: Label | str
    reason: str
    actor: str = "operator"
    approver: str | None = None
    replacement: str | None = None


@dataclass(frozen=True, slots=True)
class Declassification:
    """A row of the register: a request (``pending``, ``denied``, ``expired``) or a downgrade performed
    (``done``; ``memory`` is the new version when this call performed it)."""

    id: int
    status: str
    agent_id: str
    key: str
    from_label: Label
    to_label: Label
    reason: str
    actor: str
    approver: str | None
    content_sha256: str
    replaced: bool
    created_at: datetime
    expires_at: datetime | None = None
    decided_at: datetime | None = None
    memory: Memory | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape the CLI and the console print (the content itself is never part of it)."""

        def iso(moment: datetime | None) -> str | None:
            return None if moment is None else moment.isoformat()

        return {
            "id": self.id,
            "status": self.status,
            "agent_id": self.agent_id,
            "key": self.key,
            "from": self.from_label.name,
            "to": self.to_label.name,
            "reason": self.reason,
            "actor": self.actor,
            "approver": self.approver,
            "content_sha256": self.content_sha256,
            "replaced": self.replaced,
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
            "decided_at": iso(self.decided_at),
        }


def approval_ttl(value: object) -> timedelta:
    """A request's lifetime: a ``timedelta`` or seconds, positive and at most a year."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise ValidationError("approval_ttl must be a duration (timedelta or seconds)")
    if not 0 < seconds <= 366 * 86400:
        raise ValidationError("approval_ttl must be positive and at most a year")
    return timedelta(seconds=seconds)


class Declassifier:
    """A store's declassifications (``Store.declassify`` and its siblings call these)."""

    def __init__(self, store: Store, require_approval: bool, ttl: object) -> None:
        if not isinstance(require_approval, bool):
            raise ValidationError("require_approval must be true or false")
        self.store = store
        self.require_approval = require_approval
        self.ttl = approval_ttl(ttl)

    def declassify(self, ask: Ask) -> Declassification:
        order = self._order(ask)
        if order.approver is not None and order.approver == order.actor:
            raise _same_person(order.actor)
        now = self.store.now()
        order = self._screened(order, now)  # a request too: refused now, not after a second operator's time
        if order.approver is None and self.require_approval:
            expires = now + self.ttl
            transactions = self.store.backend.transactions
            request_id = transactions.operator(now, lambda tx: sql.request_body(tx, order, expires))
            return self._get(request_id)
        return self._perform(order, now)

    def approve(self, request_id: int, approver: str, now: datetime | None) -> Declassification:
        request_id, approver = _request_id(request_id), check_id(approver, "approver")
        now = now or self.store.now()
        row = self._row(request_id, now)
        sql.approvable(row, approver)  # refused before anything is read further; checked again when performed
        replacement = self.store.backend.transactions.operator(
            now, lambda tx: sql.request_replacement(tx, request_id), read_only=True
        )
        names = self.store.compartments
        order = sql.Order(
            row.agent_id,
            row.key,
            row.from_code,
            row.to_code,
            names.label_of(row.from_code).name,
            names.label_of(row.to_code).name,
            row.reason,
            row.actor,
            approver,
            replacement,
            request_id,
            row.content_sha256,
        )
        return self._perform(self._screened(order, now), now)  # the rules in force when it is performed

    def deny(self, request_id: int, by: str, now: datetime | None) -> Declassification:
        request_id, by = _request_id(request_id), check_id(by, "operator")
        now = now or self.store.now()
        row = self.store.backend.transactions.operator(now, lambda tx: sql.deny_body(tx, request_id, by))
        return self._named(row)

    def page(
        self, status: str | None, limit: int, before: int | None
    ) -> tuple[list[Declassification], int | None]:
        """One page of the register, newest first, and the ``before`` of the next page (None: no more)."""
        if status is not None and status not in sql.STATUSES:
            raise ValidationError(f"status must be one of {', '.join(sql.STATUSES)}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit must be an integer from 1 to {MAX_PAGE}")
        before = None if before is None else _request_id(before)
        rows, more = self.store.backend.transactions.operator(
            self.store.now(), lambda tx: sql.page_body(tx, status, limit, before), read_only=True
        )
        found = [self._named(row) for row in rows]
        return found, (found[-1].id if more and found else None)

    # ------------------------------------------------------------------

    def _order(self, ask: Ask) -> sql.Order:
        agent_id, key = check_agent_id(ask.agent_id), check_key(ask.key)
        high, low = Label.parse(ask.from_label), Label.parse(ask.to_label)
        if not low < high:
            raise ValidationError(
                f"{low.name} is not lower than {high.name}: declassification only moves down"
            )
        reason = check_text(ask.reason, "reason", MAX_REASON_CHARS)
        if not reason.strip():
            raise ValidationError("a declassification needs a reason")
        actor = check_id(ask.actor, "actor")
        approver = None if ask.approver is None else check_id(ask.approver, "approver")
        replacement = ask.replacement
        if replacement is not None:
            replacement = check_content(replacement, self.store.max_content_bytes)
        registry = self.store.compartments
        from_code, to_code = registry.encode(high), registry.encode(low)
        return sql.Order(
            agent_id, key, from_code, to_code, high.name, low.name, reason, actor, approver, replacement
        )

    def _perform(self, order: sql.Order, now: datetime) -> Declassification:
        memory, request_id = self.store.backend.declassify(order, now)
        return _with_memory(self._get(request_id), self.store.compartments.named(memory))

    def _screened(self, order: sql.Order, now: datetime) -> sql.Order:
        """The policy gate over a replacement text, as over an imported memory (the scanner, then the
        operator's default rules), judged as a write by the record's agent at the lower label. Anything
        the scanner finds refuses the act (a quarantined text has no place below its label); a rule's
        redaction is applied. One ``policy.decision`` operator event records the verdict, never the text."""
        from .policy.engine import DEFAULT_POLICY  # the policy package imports the store
        from .policy.gate import HOOK, MemoryWrite, judge, refusal, write_facts

        text = order.replacement
        if text is None:
            return order  # the content as it was: it passed the gate when it was saved
        level = Label.parse(order.to_name).level
        record = SessionRecord("", order.agent_id, level, (), level, now)
        write = MemoryWrite(order.key, text)
        facts = write_facts(record, DEFAULT_POLICY, write, path="declassify", origin="declassify")
        verdict = judge(DEFAULT_POLICY, facts, write, name="declassify")
        refused = verdict.blocked or bool(verdict.kinds)
        detail = {"hook": HOOK.value, "write_path": "declassify", "kinds": list(verdict.kinds)}
        self.store.audit(
            AuditDraft(
                "policy.decision",
                agent_id=order.agent_id,
                taint=Level.RESTRICTED,  # an operator act's event
                keys=(order.key,),
                outcome="blocked" if refused else "allowed",
                detail=detail,
            )
        )
        if verdict.blocked:
            raise refusal("declassify", verdict.decision)
        if verdict.kinds:
            raise PolicyBlocked(
                f"declassification refused: the replacement text holds {', '.join(verdict.kinds)}; nothing was written"
            )
        return replace(order, replacement=verdict.applied(write).content)

    def _row(self, request_id: int, now: datetime) -> sql.RequestRow:
        return self.store.backend.transactions.operator(
            now, lambda tx: sql.request_row(tx, request_id, lock=False), read_only=True
        )

    def _get(self, request_id: int) -> Declassification:
        return self._named(self._row(request_id, self.store.now()))

    def request(self, request_id: object) -> Declassification:
        """One row of the register (NOT_FOUND when there is none)."""
        return self._get(_request_id(request_id))

    def _named(self, row: sql.RequestRow) -> Declassification:
        names = self.store.compartments
        return Declassification(
            row.id,
            row.status,
            row.agent_id,
            row.key,
            names.label_of(row.from_code),
            names.label_of(row.to_code),
            row.reason,
            row.actor,
            row.approver,
            row.content_sha256,
            row.replaced,
            row.created_at,
            row.expires_at,
            row.decided_at,
        )


def _with_memory(found: Declassification, memory: Memory) -> Declassification:
    return replace(found, memory=memory)


def _request_id(value: object) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise NotFound(f"no declassification request {value!r}"[:120])
    return value


def _same_person(actor: str) -> PolicyBlocked:
    return PolicyBlocked(f"a declassification needs an approver other than {actor!r} (two-person rule)")
