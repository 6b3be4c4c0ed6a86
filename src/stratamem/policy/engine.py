"""The policy pipeline: built-in guards, operator hooks and rules, approvals, audit.

``Policy`` is the operator's configuration object (rules, hooks, approver,
timeout, read-only, scanner mode). It is immutable after construction and
holds no per-session state, so one instance can serve every session of a
runtime. Deciding is split in two:

- :meth:`Policy.evaluate` — hooks then rules for one hook point, on a
  deadline, fail closed. No side effects.
- :meth:`Policy.decide` — ``evaluate`` plus the approver for
  REQUIRE_APPROVAL, plus the audit event every decision leaves.

The runtime-facing checks for prompts and output (PRE_CONTEXT_INJECTION,
PRE_OUTPUT) live here too; tool calls are driven by ``stratamem.tools``.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import tracing
from ..audit import AuditDraft
from ..errors import ValidationError
from ..levels import Level
from ..models import Memory
from ..storage.records import SessionRecord
from . import facts as facts_mod
from .guards import write_down_guard
from .loader import load_rules, rules_from_yaml
from .model import ALLOW, Action, Decision, HookPoint, Rule
from .redact import redact_text
from .rules import first_match, ordered
from .scanner import ScanMode, is_quarantined
from .timeout import call_with_timeout

if TYPE_CHECKING:
    from ..session import Session
    from ..store import Store

DEFAULT_TIMEOUT_S = 1.0

HookResult = Decision | Action | str | None
Hook = Callable[[Mapping[str, Any]], HookResult]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver is asked: which hook and rule want approval, with the facts at hand."""

    hook: HookPoint
    rule_id: str | None
    message: str
    facts: Mapping[str, Any]


Approver = Callable[[ApprovalRequest], bool]


def deny_all(request: ApprovalRequest) -> bool:
    """The default approver: nobody is there to approve, so nothing is approved."""
    return False


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """PRE_OUTPUT's answer: whether the text may go out, and the text to send (maybe redacted)."""

    allowed: bool
    text: str | None
    decision: Decision


_OUTCOMES = {
    Action.ALLOW: "allowed",
    Action.BLOCK: "blocked",
    Action.REDACT: "redacted",
    Action.REQUIRE_APPROVAL: "pending",
}


class Policy:
    """Operator policy for tool calls, prompt context and output."""

    def __init__(
        self,
        rules: Iterable[Rule] = (),
        *,
        hooks: Iterable[tuple[HookPoint | str, Hook]] = (),
        approver: Approver = deny_all,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        read_only: bool = False,
        scan_mode: ScanMode | str = ScanMode.REJECT,
    ) -> None:
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
        ):
            raise ValidationError(f"timeout must be a positive number of seconds or None, not {timeout!r}")
        if not isinstance(read_only, bool):
            raise ValidationError(f"read_only must be true or false, not {read_only!r}")
        self.rules: tuple[Rule, ...] = ordered(rules)
        self.hooks: tuple[tuple[HookPoint, Hook], ...] = tuple((HookPoint.parse(p), fn) for p, fn in hooks)
        self.approver = approver
        self.timeout = timeout
        self.read_only = read_only
        self.scan_mode = ScanMode.parse(scan_mode)

    @classmethod
    def from_yaml(cls, text: str, **options: Any) -> Policy:
        return cls(rules_from_yaml(text), **options)

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> Policy:
        return cls(load_rules(path), **options)

    def replace(self, **changes: Any) -> Policy:
        """A copy with some settings changed (e.g. ``policy.replace(read_only=True)``)."""
        options: dict[str, Any] = {
            "rules": self.rules,
            "hooks": self.hooks,
            "approver": self.approver,
            "timeout": self.timeout,
            "read_only": self.read_only,
            "scan_mode": self.scan_mode,
        }
        options.update(changes)
        return Policy(options.pop("rules"), **options)

    # ------------------------------------------------------------------ deciding

    def _run_hooks(self, hook: HookPoint, facts: Mapping[str, Any]) -> Decision | None:
        for point, fn in self.hooks:
            if point is not hook:
                continue
            name = f"hook:{getattr(fn, '__name__', type(fn).__name__)}"
            try:
                result = fn(facts)
                if result is None:
                    continue
                if isinstance(result, Decision):
                    decision = result if result.rule_id else dataclasses.replace(result, rule_id=name)
                    decision = dataclasses.replace(decision, source="hook")
                else:
                    decision = Decision(Action.parse(result), name, "", "hook")
            except Exception as exc:  # noqa: BLE001 - a failing hook blocks
                return _failed(name, "a policy hook failed; blocked", exc)
            if decision.action is not Action.ALLOW:
                return decision
        return None

    def _evaluate_now(self, hook: HookPoint, facts: Mapping[str, Any]) -> Decision:
        return self._run_hooks(hook, facts) or first_match(self.rules, hook, facts)

    def _has_work(self, hook: HookPoint) -> bool:
        return any(r.hook is hook for r in self.rules) or any(p is hook for p, _ in self.hooks)

    def evaluate(self, hook: HookPoint, facts: Mapping[str, Any]) -> Decision:
        """Hooks, then rules (first match by priority), on a deadline; ALLOW when nothing fires.

        A hook or rule that raises, or an evaluation that exceeds ``timeout``,
        gives BLOCK. Hooks get a private copy of the facts.
        """
        if not self._has_work(hook):
            return ALLOW
        try:
            private = copy.deepcopy(dict(facts))
            return call_with_timeout(lambda: self._evaluate_now(hook, private), self.timeout)
        except TimeoutError:
            return Decision(
                Action.BLOCK, None, f"policy check timed out after {self.timeout} s; blocked", "timeout"
            )
        except Exception as exc:  # noqa: BLE001 - fail closed
            return _failed(None, "policy check failed; blocked", exc)

    def approve(self, hook: HookPoint, decision: Decision, facts: Mapping[str, Any]) -> Decision:
        """Turn REQUIRE_APPROVAL into ALLOW or BLOCK by asking the approver.

        Only a literal ``True`` approves; an approver that raises denies. The
        approver is not put on the hook deadline: waiting for a human is its job.
        """
        if decision.action is not Action.REQUIRE_APPROVAL:
            return decision
        try:
            request = ApprovalRequest(hook, decision.rule_id, decision.message, copy.deepcopy(dict(facts)))
            granted = self.approver(request) is True
            verdict = "granted" if granted else "denied"
        except Exception:  # noqa: BLE001 - an approver that fails has not approved
            granted, verdict = False, "error"
        if granted:
            return Decision(
                Action.ALLOW, decision.rule_id, decision.message, "approval", detail={"approval": verdict}
            )
        message = f"{decision.message or 'this action needs approval'} (approval {verdict})"
        return Decision(Action.BLOCK, decision.rule_id, message, "approval", detail={"approval": verdict})

    def decide(
        self,
        store: Store,
        record: SessionRecord,
        hook: HookPoint,
        facts: Mapping[str, Any],
        *,
        guard: Decision | None = None,
        lineage_ids: Sequence[str] = (),
        detail: Mapping[str, Any] | None = None,
    ) -> Decision:
        """The decision for one hook call, audited. A ``guard`` decision (built-in) skips evaluation."""
        with tracing.span("stratamem.policy", {"stratamem.hook": hook.value}) as span:
            decision = guard or self.approve(hook, self.evaluate(hook, facts), facts)
            self.record(store, record, hook, decision, lineage_ids=lineage_ids, detail=detail)
            if span is not None:
                span.set_attribute("stratamem.action", decision.action.value)
        return decision

    @staticmethod
    def record(
        store: Store,
        record: SessionRecord,
        hook: HookPoint,
        decision: Decision,
        *,
        lineage_ids: Sequence[str] = (),
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """Append the ``policy.decision`` audit event: hook, rule, action — never content."""
        body = {
            "hook": hook.value,
            "rule_id": decision.rule_id,
            "action": decision.action.value,
            "source": decision.source,
            **decision.detail,
            **(detail or {}),
        }
        store.audit(
            AuditDraft(
                "policy.decision",
                record.id,
                record.agent_id,
                record.taint_code,
                lineage_ids=tuple(lineage_ids),
                outcome=_OUTCOMES[decision.action],
                detail=body,
            )
        )

    # ------------------------------------------------------------------ prompt context and output

    def prepare_context(
        self,
        session: Session,
        memories: Iterable[Memory],
        *,
        origin: str | None = None,
        channel: str | None = None,
    ) -> list[Memory]:
        """PRE_CONTEXT_INJECTION: the memories that may enter the prompt, redacted as the rules say.

        Always dropped: quarantined memories and anything above the live taint
        (defence in depth — the caller may have fetched them elsewhere). Then
        each memory is judged by hooks and rules; BLOCK drops it, REDACT edits
        its content. One audit event records the lineage ids injected.
        """
        record = session.record
        base = facts_mod.session_facts(
            HookPoint.PRE_CONTEXT_INJECTION, record, origin=origin, channel=channel, read_only=self.read_only
        )
        candidates = [
            m
            for m in memories
            if Level(m.level) <= record.taint and m.agent_id in record.agents and not is_quarantined(m.tags)
        ]
        per_memory = [facts_mod.memory_facts(base, m) for m in candidates]
        hook = HookPoint.PRE_CONTEXT_INJECTION
        if self._has_work(hook):
            try:
                raw = call_with_timeout(
                    lambda: [self._evaluate_now(hook, copy.deepcopy(f)) for f in per_memory], self.timeout
                )
            except Exception:  # noqa: BLE001 - timeout or failure: inject nothing
                raw = [Decision(Action.BLOCK, None, "policy check failed; blocked", "timeout")] * len(
                    candidates
                )
            decisions = [self.approve(hook, d, f) for d, f in zip(raw, per_memory, strict=True)]
        else:
            decisions = [ALLOW] * len(candidates)
        kept: list[Memory] = []
        for memory, decision in zip(candidates, decisions, strict=True):
            if decision.action is Action.REDACT:
                kept.append(dataclasses.replace(memory, content=redact_text(memory.content, decision)))
            elif decision.action is Action.ALLOW:
                kept.append(memory)
        fired = sorted({d.rule_id for d in decisions if d.rule_id})
        summary = _summary(decisions, kept)
        self.record(
            session.store,
            record,
            hook,
            summary,
            lineage_ids=[m.lineage_id for m in kept],
            detail={"injected": len(kept), "withheld": len(decisions) - len(kept), "rules": fired},
        )
        return kept

    def check_output(
        self,
        session: Session,
        text: str,
        *,
        channel_level: Level | str,
        channel: str | None = None,
        origin: str | None = None,
    ) -> OutputCheck:
        """PRE_OUTPUT: may ``text`` go to a channel cleared for ``channel_level``?

        A channel below the session's live taint is always refused (no write
        down); otherwise hooks and rules decide, and REDACT returns the edited
        text.
        """
        if not isinstance(text, str):
            raise ValidationError("output text must be a string")
        record = session.record
        level = Level.parse(channel_level)
        base = facts_mod.session_facts(
            HookPoint.PRE_OUTPUT, record, origin=origin, channel=channel, read_only=self.read_only
        )
        facts = facts_mod.output_facts(base, text, level)
        decision = self.decide(
            session.store,
            record,
            HookPoint.PRE_OUTPUT,
            facts,
            guard=write_down_guard(record.taint, level),
            detail={"channel": channel, "channel_level": level.name},
        )
        if decision.action is Action.BLOCK:
            return OutputCheck(False, None, decision)
        if decision.action is Action.REDACT:
            return OutputCheck(True, redact_text(text, decision), decision)
        return OutputCheck(True, text, decision)


def _failed(rule_id: str | None, message: str, exc: Exception) -> Decision:
    """The BLOCK a hook or a check that raised gives: fail closed, naming the error's type only."""
    return Decision(Action.BLOCK, rule_id, message, "error", detail={"error": type(exc).__name__})


def _summary(decisions: Sequence[Decision], kept: Sequence[Memory]) -> Decision:
    """One decision standing for a batch: the strictest action taken."""
    for action in (Action.BLOCK, Action.REDACT):
        hit = next((d for d in decisions if d.action is action), None)
        if hit is not None:
            return dataclasses.replace(hit, detail={})
    return ALLOW


DEFAULT_POLICY = Policy()
