"""Running one tool call: policy before, handler, policy after, audit — never an exception.

The order of a call:

1. Unknown tool name -> ``None`` (so runtimes can chain executors).
2. The session record is read once, live (taint, agent, clearance).
3. PRE_TOOL_CALL: ``classification``/``level``/``agent_id``/``agent``
   arguments are stripped (the store always writes at the live taint, for
   the session's own agent); read-only sessions refuse writing tools;
   arguments are checked; then the policy gate (``policy.gate``, the same
   one autosave, the Turn helper, the CLI and import use) runs the
   poisoning scanner on writes and the operator's hooks and rules.
4. The handler runs against the session.
5. POST_TOOL_RESPONSE: hooks and rules may block or redact the answer; the
   answer then fits the store's ``max_answer_chars`` (handlers cut their own
   with a cursor; ``fit.bound`` keeps the bound for anything else).
6. A ``tool.call`` audit event records tool, profile and outcome.

Every failure becomes ``{"error": {"code", "message"}}``: ``StratamemError``
keeps its code, anything unexpected is reported as STORAGE_ERROR without
details (which could carry content).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import shapes
from ..audit import AuditDraft
from ..errors import StratamemError, ValidationError
from ..policy import facts as facts_mod
from ..policy import gate
from ..policy.engine import DEFAULT_POLICY, Policy
from ..policy.model import Action, HookPoint
from ..policy.redact import redact_fields, redact_text
from ..scope import scoped
from ..storage.records import SessionRecord
from . import fit, knowledge, mcp_memory, save_many_tools, triggerfish, zeroclaw
from .arguments import parse_arguments
from .events import emit_call_started, emit_tool_events, new_call_id
from .graph_specs import GraphWrite
from .specs import TOOLS, ToolSpec

if TYPE_CHECKING:
    from ..session import Session

HANDLERS = {**triggerfish.HANDLERS, **zeroclaw.HANDLERS, **knowledge.HANDLERS, **mcp_memory.HANDLERS}
REDACTABLE_ARGUMENTS = ("content", "context", "query")
INTERNAL_ERROR = "the memory tool failed unexpectedly; nothing more is known to the agent"


def _render(payload: Any) -> str:
    return payload if isinstance(payload, str) else shapes.dumps(payload)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A call that passed PRE_TOOL_CALL: the facts rules saw and the arguments to run with."""

    facts: dict[str, Any]
    arguments: dict[str, Any]
    quarantine: bool


class _Call:
    """One tool call: spec, session, policy, and where it came from."""

    def __init__(
        self, session: Session, spec: ToolSpec, policy: Policy, origin: str | None, channel: str | None
    ) -> None:
        self.session = session
        self.store = session.store
        self.spec = spec
        self.policy = policy
        self.origin = origin
        self.channel = channel

    def run(self, record: SessionRecord, arguments: object) -> str:
        prepared = self._before(record, arguments)
        batch = save_many_tools.HANDLERS.get(self.spec.name)
        if batch is not None:  # each item passes the gate as a single write would (gated_save_many)
            payload = batch(
                self.session, prepared.arguments, save_many_tools.Gate(self.policy, self.origin, self.channel)
            )
            return self._after(record, prepared.facts, payload)
        # Autonomous origins (cron, daemon, subturn) read no conversation memories (scope.py).
        # A ScopedSession stands in for the Session: it narrows reads and forwards everything else.
        session = scoped(self.session, self.origin)
        payload = HANDLERS[self.spec.name](session, prepared.arguments, prepared.quarantine)  # type: ignore[arg-type]
        return self._after(record, prepared.facts, payload)

    def _before(self, record: SessionRecord, arguments: object) -> _Prepared:
        """PRE_TOOL_CALL: strip forced arguments, read-only, argument checks, then the policy gate."""
        spec, policy, hook = self.spec, self.policy, HookPoint.PRE_TOOL_CALL
        if not isinstance(arguments, Mapping):
            raise ValidationError("arguments must be a JSON object")
        raw, stripped, requested = facts_mod.strip_forced(arguments)
        detail: dict[str, Any] = {"tool": spec.name, "stripped": list(stripped)}
        action = raw.get("action")
        is_write = spec.writes or (isinstance(action, str) and action in spec.write_actions)
        gate.admit(self.store, record, policy, spec.name, is_write=is_write, detail=detail)
        cleaned = parse_arguments(
            spec, raw, max_content_bytes=self.store.max_content_bytes, max_batch=self.store.max_batch
        )
        base = facts_mod.session_facts(
            hook, record, origin=self.origin, channel=self.channel, read_only=policy.read_only
        )
        facts = facts_mod.tool_call_facts(
            base, spec.name, spec.profile, raw, is_write=is_write, stripped=stripped, requested=requested
        )
        verdict = gate.check(
            self.store,
            record,
            policy,
            facts,
            self._write(cleaned, is_write),
            name=spec.name,
            path="tool",
            is_write=is_write,
            detail=detail,
        )
        if verdict.blocked:
            raise gate.refusal(spec.name, verdict.decision)
        if verdict.decision.action is Action.REDACT:
            cleaned = redact_fields(cleaned, verdict.decision, REDACTABLE_ARGUMENTS)
        return _Prepared(facts, cleaned, verdict.quarantine)

    def _write(self, cleaned: dict[str, Any], is_write: bool) -> gate.MemoryWrite | GraphWrite | None:
        """What a writing tool would store (every text field is scanned); None for other tools."""
        if is_write and self.spec.texts is not None:  # graph tools: names, types, observations, notes
            return GraphWrite(tuple(self.spec.texts(cleaned)))
        if not (self.spec.writes and self.spec.param("content") is not None):
            return None
        return gate.MemoryWrite(
            cleaned["key"],
            cleaned["content"],
            tuple(cleaned.get("tags") or ()),
            cleaned.get("category") or "core",
            cleaned.get("context"),
        )

    def _after(self, record: SessionRecord, facts: dict[str, Any], payload: Any) -> str:
        """POST_TOOL_RESPONSE, then the answer within the store's character budget (``tools.fit``)."""
        return fit.bound(self._respond(record, facts, payload), self.store.max_answer_chars)

    def _respond(self, record: SessionRecord, facts: dict[str, Any], payload: Any) -> str:
        """POST_TOOL_RESPONSE: the answer as the model will see it, or a refusal."""
        text = _render(payload)
        decision = self.policy.decide(
            self.store,
            record,
            HookPoint.POST_TOOL_RESPONSE,
            facts_mod.tool_response_facts(facts, text),
            detail={"tool": self.spec.name},
        )
        if decision.action is Action.BLOCK:
            raise gate.refusal(self.spec.name, decision)
        if decision.action is Action.REDACT:
            if isinstance(payload, str):
                return redact_text(payload, decision)
            return _render(redact_fields(payload, decision))
        return text


def _audit_call(session: Session, record: SessionRecord, spec: ToolSpec, outcome: str) -> None:
    """The ``tool.call`` event. Failing to write it must not turn a done action into an error."""
    with contextlib.suppress(Exception):  # the operation's own event is already in the log
        session.store.audit(
            AuditDraft(
                "tool.call",
                record.id,
                record.agent_id,
                record.taint_code,
                outcome=outcome,
                detail={"tool": spec.name, "profile": spec.profile},
            )
        )


def execute(
    session: Session,
    name: str,
    arguments: dict[str, Any],
    *,
    policy: Policy | None = None,
    profile: str | None = None,
    origin: str | None = None,
    channel: str | None = None,
    call_id: str | None = None,
    report_call: bool = True,
) -> str | None:
    """Run the memory tool ``name`` for ``session``; ``None`` when ``name`` is not one of ours.

    Returns the tool's answer text: a JSON shape (triggerfish), plain text
    (zeroclaw), or the JSON error shape. Never raises. ``profile`` limits the
    names recognised to one profile; ``origin``/``channel`` are facts for
    operator rules. Observer events: a ``ToolCallStarted``/``ToolCall`` pair
    sharing ``call_id`` (a fresh one by default) — left to the caller with
    ``report_call=False`` (``Turn.run_memory_tool`` reports the pair of its
    model's call) — then the store or recall events the call caused.
    """
    spec = TOOLS.get(name) if isinstance(name, str) else None
    if spec is None or (profile is not None and spec.profile != profile):
        return None
    try:
        record = session.record
    except StratamemError as exc:
        return shapes.dumps(shapes.error_from(exc))
    except Exception:  # noqa: BLE001
        return shapes.dumps(shapes.error("STORAGE_ERROR", INTERNAL_ERROR))
    call = (call_id or new_call_id()) if report_call else None
    if call is not None:
        emit_call_started(session, spec, arguments, call, origin)
    started = time.perf_counter()
    try:
        text = _Call(session, spec, policy or DEFAULT_POLICY, origin, channel).run(record, arguments)
        outcome = "ok"
    except StratamemError as exc:
        text, outcome = shapes.dumps(shapes.error_from(exc)), exc.code.lower()
    except Exception:  # noqa: BLE001 - never escape into the agent loop
        text, outcome = shapes.dumps(shapes.error("STORAGE_ERROR", INTERNAL_ERROR)), "storage_error"
    _audit_call(session, record, spec, outcome)
    elapsed = (time.perf_counter() - started) * 1000
    emit_tool_events(session, spec, arguments, outcome, elapsed, origin, text, call)
    return text
