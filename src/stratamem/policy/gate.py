"""The one policy gate every memory write passes, whatever path it came by.

Tool calls (and so MCP and REST), autosave, the ``Turn`` helper, the CLI's
``save`` and ``import`` all ask :func:`check` before they write, so a
read-only session, the poisoning scanner and the operator's rules hold on
every path; there is no side door that writes without them.

The order, first refusal wins:

1. read-only: a read-only policy refuses every write;
2. the poisoning scanner (``scanner.scan`` over every view of key, content,
   context, category and tags — a context is content: it is stored with the
   memory and shapes its embedding): REJECT mode refuses, QUARANTINE mode lets the write
   through tagged ``stratamem:quarantine`` (no tool read returns it);
3. the operator's PRE_TOOL_CALL hooks and rules, then the approver.

The decision is audited as ``policy.decision`` with the path
(``write_path``) and the scanner's kinds, never content. Rules see the same
facts on every path: ``tool`` is the tool's name for tool calls and
``memory_save`` for other writes, ``write_path`` says which path it was
(``tool``, ``autosave``, ``turn``, ``cli``, ``import``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from ..audit import AuditDraft
from ..errors import PolicyBlocked
from ..levels import Level
from ..models import Memory, context_of, situated
from ..save_many import as_items, check_batch
from ..storage.records import SessionRecord
from ..validation import (
    check_category,
    check_content,
    check_context,
    check_key,
    check_occurred_at,
    check_tags,
)
from . import facts as facts_mod
from .engine import DEFAULT_POLICY, Policy
from .guards import read_only_guard, scanner_guard
from .model import Action, Decision, HookPoint
from .redact import redact_text
from .scanner import QUARANTINE_TAG, ScanMode

if TYPE_CHECKING:
    from ..session import Session
    from ..store import Store

__all__ = [
    "MemoryWrite",
    "Verdict",
    "admit",
    "check",
    "gated_save",
    "gated_save_many",
    "judge",
    "refusal",
    "screen_import",
    "write_facts",
]

HOOK = HookPoint.PRE_TOOL_CALL
PROGRESS_EVERY = 100  # an import's screening reports progress every so many memories
WRITE_TOOL = "memory_save"


@dataclass(frozen=True, slots=True)
class MemoryWrite:
    """What a write would store, as text fields the scanner and rules look at."""

    key: str
    content: str
    tags: tuple[str, ...] = ()
    category: str = "core"
    context: str | None = None

    def texts(self) -> tuple[object, ...]:
        situation = () if self.context is None else (self.context,)
        return (self.key, self.content, *situation, self.category, *self.tags)

    def arguments(self) -> dict[str, Any]:
        """The write as a rule sees it (a tool call's argument names); ``context`` only when there is one."""
        shown = {"key": self.key, "content": self.content, "tags": list(self.tags), "category": self.category}
        if self.context is not None:
            shown["context"] = self.context
        return shown


@dataclass(frozen=True, slots=True)
class Verdict:
    """The gate's answer: the decision, what the scanner found, and whether to quarantine."""

    decision: Decision
    kinds: tuple[str, ...] = ()
    quarantine: bool = False

    @property
    def blocked(self) -> bool:
        return self.decision.action is Action.BLOCK

    def applied(self, write: MemoryWrite) -> MemoryWrite:
        """The write as it may be stored: content and context redacted if a rule said so, quarantine tag added."""
        content, context = write.content, write.context
        if self.decision.action is Action.REDACT:
            content = redact_text(content, self.decision)
            context = None if context is None else redact_text(context, self.decision)
        tags = with_quarantine(write.tags, self.quarantine)
        return dataclasses.replace(write, content=content, tags=tags, context=context)


def with_quarantine(tags: Iterable[str], quarantine: bool) -> tuple[str, ...]:
    """The tags to store: the caller's, plus the reserved quarantine tag when the scanner asked for it."""
    tags = tuple(tags)
    return (*tags, QUARANTINE_TAG) if quarantine and QUARANTINE_TAG not in tags else tags


def refusal(name: str, decision: Decision) -> PolicyBlocked:
    """The error a blocked call raises: the decision's message, or the rule that blocked."""
    if decision.message:
        return PolicyBlocked(decision.message)
    rule = f" (rule {decision.rule_id!r})" if decision.rule_id else ""
    return PolicyBlocked(f"{name} was blocked by policy{rule}")


def write_facts(
    record: SessionRecord,
    policy: Policy,
    write: MemoryWrite,
    *,
    path: str,
    origin: str | None = None,
    channel: str | None = None,
) -> dict[str, Any]:
    """The facts a rule sees for a write that did not come as a tool call (same names as a tool call's)."""
    base = facts_mod.session_facts(HOOK, record, origin=origin, channel=channel, read_only=policy.read_only)
    facts = facts_mod.tool_call_facts(base, WRITE_TOOL, "store", write.arguments(), is_write=True)
    facts["write_path"] = path
    return facts


def admit(
    store: Store,
    record: SessionRecord,
    policy: Policy,
    name: str,
    *,
    is_write: bool,
    detail: Mapping[str, Any] | None = None,
) -> None:
    """Step 1 alone (read-only), audited; raises ``PolicyBlocked``. Runs before arguments are parsed."""
    decision = read_only_guard(policy.read_only, is_write, name)
    if decision is not None:
        policy.record(store, record, HOOK, decision, detail=detail)
        raise refusal(name, decision)


class ScannedWrite(Protocol):
    """A write the scanner reads: a memory (``MemoryWrite``) or a graph write (``tools.graph_specs.GraphWrite``)."""

    def texts(self) -> tuple[object, ...]: ...


def judge(
    policy: Policy, facts: Mapping[str, Any], write: ScannedWrite | None, *, name: str, is_write: bool = True
) -> Verdict:
    """Steps 1-3 without side effects: read-only, scanner, hooks/rules/approval."""
    guard = read_only_guard(policy.read_only, is_write, name)
    if guard is not None:
        return Verdict(guard)
    kinds: tuple[str, ...] = ()
    if write is not None:
        guard, kinds = scanner_guard(policy.scan_mode, write.texts())
        if guard is not None:
            return Verdict(guard, kinds)
    decision = policy.approve(HOOK, policy.evaluate(HOOK, facts), facts)
    quarantine = (
        bool(kinds) and policy.scan_mode is ScanMode.QUARANTINE and decision.action is not Action.BLOCK
    )
    return Verdict(decision, kinds, quarantine)


def check(
    store: Store,
    record: SessionRecord,
    policy: Policy,
    facts: Mapping[str, Any],
    write: ScannedWrite | None,
    *,
    name: str,
    path: str,
    is_write: bool = True,
    detail: Mapping[str, Any] | None = None,
) -> Verdict:
    """:func:`judge`, then the ``policy.decision`` audit event (path, kinds; never content)."""
    facts = {**facts, "write_path": path}
    verdict = judge(policy, facts, write, name=name, is_write=is_write)
    body: dict[str, Any] = {"write_path": path, **(detail or {})}
    if verdict.quarantine:
        body["quarantined"] = list(verdict.kinds)
    policy.record(store, record, HOOK, verdict.decision, detail=body)
    return verdict


def check_write(
    store: Store,
    record: SessionRecord,
    policy: Policy,
    write: MemoryWrite,
    *,
    path: str,
    origin: str | None,
    channel: str | None,
    detail: Mapping[str, Any] | None = None,
) -> Verdict:
    """:func:`check` of one memory write that did not come as a tool call, named after its path."""
    facts = write_facts(record, policy, write, path=path, origin=origin, channel=channel)
    return check(store, record, policy, facts, write, name=f"{path} write", path=path, detail=detail)


def gated_save(
    session: Session,
    key: str,
    content: str,
    tags: Sequence[str] = (),
    category: str = "core",
    ttl: float | timedelta | None = None,
    *,
    policy: Policy | None = None,
    path: str,
    origin: str | None = None,
    channel: str | None = None,
    occurred_at: datetime | str | None = None,
    context: str | None = None,
) -> Memory:
    """``session.save`` behind the gate: the way every non-tool path writes a memory.

    Arguments are validated first (a malformed write is a ValidationError,
    not a policy decision); a blocked write raises ``PolicyBlocked``. The
    context is judged with the content: a refused context refuses the save.
    """
    policy = policy or DEFAULT_POLICY
    store, record = session.store, session.record
    max_bytes = store.max_content_bytes
    occurred = check_occurred_at(occurred_at)
    write = MemoryWrite(
        check_key(key),
        check_content(content, max_bytes),
        check_tags(tags),
        check_category(category),
        check_context(context),
    )
    verdict = check_write(store, record, policy, write, path=path, origin=origin, channel=channel)
    if verdict.blocked:
        raise refusal(f"{path} write", verdict.decision)
    stored = verdict.applied(write)
    return session.save(
        stored.key,
        stored.content,
        tags=stored.tags,
        category=stored.category,
        ttl=ttl,
        occurred_at=occurred,
        context=stored.context,
    )


def gated_save_many(
    session: Session,
    items: Sequence[Mapping[str, Any]],
    *,
    policy: Policy | None = None,
    path: str,
    origin: str | None = None,
    channel: str | None = None,
) -> list[Memory]:
    """``session.save_many`` behind the gate: every item judged as a single gated write would be.

    Items are validated first (a bad item is a ValidationError naming its
    index, nothing judged or written). Each item gets its own audited
    ``policy.decision`` as ``gated_save`` records; one blocked item refuses
    the whole batch (``PolicyBlocked`` naming its index) and nothing is
    written. Redaction and quarantine apply per item.
    """
    policy = policy or DEFAULT_POLICY
    store, record = session.store, session.record
    checked = check_batch(items, store.max_batch, store.max_content_bytes)
    stored: list[MemoryWrite] = []
    for index, item in enumerate(checked):
        write = MemoryWrite(item.key, item.content, item.tags, item.category, item.context)
        verdict = check_write(
            store,
            record,
            policy,
            write,
            path=path,
            origin=origin,
            channel=channel,
            detail={"batch_index": index},
        )
        if verdict.blocked:
            blocked = refusal(f"{path} write", verdict.decision)
            raise PolicyBlocked(f"item {index}: {blocked.message}; nothing of the batch was written")
        stored.append(verdict.applied(write))
    applied = [
        dataclasses.replace(item, content=w.content, tags=w.tags, context=w.context)
        for item, w in zip(checked, stored, strict=True)
    ]
    return session.save_many(as_items(applied))


def screen_import(
    store: Store,
    memories: Sequence[Memory],
    policy: Policy | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[Memory]:
    """The gate for ``import``: every memory judged as a write by its own agent at its own level.

    All or nothing, like import itself: in REJECT mode one poisoned memory
    refuses the whole import (naming positions and kinds, never content); in
    QUARANTINE mode poisoned memories are imported with the quarantine tag.
    One audit event summarises the decisions, at the highest level imported.
    """
    policy = policy or DEFAULT_POLICY
    kept: list[Memory] = []
    refused: list[str] = []
    quarantined = 0
    for position, memory in enumerate(memories, start=1):
        if progress is not None and position % PROGRESS_EVERY == 0:
            progress(position, len(memories))
        record = SessionRecord(
            memory.session_id or "",
            memory.agent_id,
            Level(memory.level),
            (),
            Level(memory.level),
            memory.created_at,
        )
        write = MemoryWrite(
            memory.key, memory.content, tuple(memory.tags), memory.category, context_of(memory)
        )
        verdict = judge(
            policy, write_facts(record, policy, write, path="import", origin="import"), write, name="import"
        )
        if verdict.blocked:
            why = ", ".join(verdict.kinds) or verdict.decision.rule_id or verdict.decision.source
            refused.append(f"memory {position}: {why}")
            continue
        quarantined += verdict.quarantine
        stored = verdict.applied(write)
        kept.append(
            situated(dataclasses.replace(memory, content=stored.content, tags=stored.tags), stored.context)
        )
    top = max((Level(m.level) for m in memories), default=Level.PUBLIC)
    outcome = "blocked" if refused else "allowed"
    store.audit(
        AuditDraft(
            "policy.decision",
            taint=top,
            outcome=outcome,
            detail={
                "hook": HOOK.value,
                "write_path": "import",
                "count": len(memories),
                "refused": len(refused),
                "quarantined": quarantined,
            },
        )
    )
    if refused:
        shown = "; ".join(refused[:20]) + (f"; and {len(refused) - 20} more" if len(refused) > 20 else "")
        raise PolicyBlocked(
            f"import refused, nothing was imported: {len(refused)} memory(ies) blocked by policy "
            f"({shown}); an operator can import without the gate: stratamem import --no-scan"
        )
    return kept
