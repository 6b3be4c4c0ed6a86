"""One agent turn, on nothing but a stratamem session.

``session.turn(user_message, origin=...)`` (or ``Turn(session, origin).begin``)
runs the lifecycle against the session's own store: the transcript and the
usage ledger are store records under the lattice (``history``, ``costs``),
recall goes through the policy layer (``recall``), autosave through the
session's save. The transcript is the single source of truth: the prompt is
rebuilt from it (a bounded tail, trimmed, with the memory context) on
demand, so the injected block is never written back and never stacks.

A turn is identified by the position of its user message in the session's
transcript, so a runtime that only speaks HTTP can come back to it
(:meth:`Turn.resume`) and a turn cannot be ended twice, even across
processes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..policy.engine import Policy
from ..storage.sql.transcripts import UsageRecord
from .autosave import AutosavePolicy, Situation, autosave_key, autosave_user_message, previous_text
from .context import ContextConfig, Origin, inject_memory_context, parse_origin
from .costs import Budget, BudgetReport, CostLedger, ModelPrice
from .errors import LimitExceededError, NotFoundError, TurnStateError, ValidationError
from .history import MAX_PAGE, StoredMessage, Transcript
from .messages import Message, ToolCallRequest
from .observe import EventBus, HistoryTrimmed, ToolCall, ToolCallStarted, emit, listening
from .recall import recall_block
from .tool_results import ToolResult, ToolResultLimits, process_tool_result, tool_message_content
from .trim import BREADCRUMB, TokenCounter, estimate_tokens, message_tokens, trim_history

if TYPE_CHECKING:
    from ..models import Memory
    from ..session import Session

__all__ = ["TrimReport", "Turn", "TurnSettings", "UsageReport"]


@dataclass(frozen=True, slots=True)
class TurnSettings:
    context: ContextConfig = field(default_factory=ContextConfig)
    autosave: AutosavePolicy = field(default_factory=AutosavePolicy)
    tool_limits: ToolResultLimits = field(default_factory=ToolResultLimits)
    history_budget_tokens: int = 16_000
    history_window: int = 200  # newest messages read per prompt; older ones count as omitted
    max_tool_results: int = 128  # per turn
    token_counter: TokenCounter = estimate_tokens
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    budget: Budget | None = None

    def __post_init__(self) -> None:
        for name in ("history_budget_tokens", "history_window", "max_tool_results"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name[0] == "h" else 1):
                raise ValidationError(f"TurnSettings.{name} must be a non-negative integer")
        if self.history_window < 1 or self.history_window > MAX_PAGE:
            raise ValidationError(f"TurnSettings.history_window must be in 1..{MAX_PAGE}")
        if not isinstance(self.prices, Mapping) or not all(
            isinstance(model, str) and isinstance(price, ModelPrice) for model, price in self.prices.items()
        ):
            raise ValidationError("TurnSettings.prices must map model names to ModelPrice")
        if self.budget is not None and not isinstance(self.budget, Budget):
            raise ValidationError("TurnSettings.budget must be a Budget")


@dataclass(frozen=True, slots=True)
class TrimReport:
    """What the last prompt left out of the transcript; ``omitted_range`` is [start, end) in positions."""

    omitted_range: tuple[int, int] | None
    messages_dropped: int
    turns_dropped: int
    tokens_before: int
    tokens_after: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "omitted": self.omitted_range is not None,
            "omitted_range": list(self.omitted_range) if self.omitted_range else None,
            "messages_dropped": self.messages_dropped,
            "turns_dropped": self.turns_dropped,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
        }


@dataclass(frozen=True, slots=True)
class UsageReport:
    record: UsageRecord
    budget: BudgetReport | None


class Turn:
    """begin -> (record_tool_calls -> record_tool_result)* -> record_usage* -> end."""

    def __init__(
        self,
        session: Session,
        origin: Origin | str = Origin.INTERACTIVE,
        *,
        settings: TurnSettings = TurnSettings(),
        policy: Policy | None = None,
        system_prompt: str | None = None,
        events: EventBus | None = None,
    ) -> None:
        self.session = session
        self.origin = parse_origin(origin)
        self.settings = settings
        self.policy = policy
        self.system_prompt = system_prompt
        self.events = events if events is not None else getattr(session.store, "events", None)
        self.transcript = Transcript(session)
        self.ledger = CostLedger(session, settings.prices)
        self.id: int | None = None
        self.last_trim: TrimReport | None = None
        self._began: datetime | None = None  # when the user message was stored
        self._state = "new"
        self._pending: dict[str, str] = {}  # unanswered tool call id -> tool name
        self._results = 0

    # ------------------------------------------------------------------ lifecycle

    def begin(self, user_message: str) -> list[Message]:
        """Record the user message, recall, autosave; return the prompt to send."""
        self._expect("new", "begin")
        if not isinstance(user_message, str) or not user_message.strip():
            raise ValidationError("user_message must be a non-empty string")
        # The user message and the tail of the prompt in one transaction (one audit event each).
        stored, offset, tail = self.transcript.append_then_tail(
            Message(role="user", content=user_message), self.settings.history_window, self.origin.value
        )
        self.id = stored.position
        self._began = stored.created_at
        self._state = "open"
        # Recall before autosaving, so the context reflects memory as the turn found it.
        context = self._recall(user_message)
        # The message before this one situates it. The tail was read at the taint the message was stored
        # at (``stored.level``), so no message in it is above that level: the bound autosave checks.
        before = previous_text(tail[:-1]) if tail and tail[-1].role == "user" else previous_text(tail)
        autosave_user_message(
            self.session,
            user_message,
            self.origin,
            self.settings.autosave,
            events=self.events,
            policy=self.policy,
            ttl=self.session.store.retention.autosave_ttl,
            occurred_at=stored.created_at,
            context=None if before is None else Situation(before, stored.level),
        )
        return self._prompt(offset, tail, context)

    @classmethod
    def resume(cls, session: Session, turn_id: int, **options: Any) -> Turn:
        """The turn whose user message is at ``turn_id`` in the session's transcript, in its stored state."""
        if isinstance(turn_id, bool) or not isinstance(turn_id, int) or turn_id < 0:
            raise ValidationError("turn id must be an integer >= 0")
        rows, _ = Transcript(session).page(turn_id, MAX_PAGE)
        if not rows or rows[0].message.role != "user":
            raise NotFoundError(f"no turn {turn_id} in this session")
        origin = options.pop("origin", None) or rows[0].origin or Origin.INTERACTIVE.value
        turn = cls(session, origin, **options)
        turn.id = turn_id
        turn._began = rows[0].created_at
        turn._state = "open"
        for stored in rows[1:]:
            message = stored.message
            if message.role == "user":
                turn._state = "ended"
                break
            if message.role == "assistant":
                if not message.tool_calls:
                    turn._state = "ended"
                    break
                turn._pending.update({c.id: c.name for c in message.tool_calls})
            elif message.role == "tool":
                turn._pending.pop(message.tool_call_id or "", None)
                turn._results += 1
        return turn

    def messages(self) -> list[Message]:
        """The prompt to send now: the trimmed tail of the transcript with the memory context.

        The system prompt is kept out of the trimmed list (and its tokens
        out of the budget) so trim positions map to transcript positions.
        The memory context is recalled anew for every prompt, never kept from
        an earlier one: a memory deleted, purged, expired or changed since (by
        any session or process) is not served again.
        """
        return self._prompt(*self.transcript.tail(self.settings.history_window))

    def _prompt(self, offset: int, tail: list[Message], context: str | None = None) -> list[Message]:
        system = [Message(role="system", content=self.system_prompt)] if self.system_prompt else []
        counter = self.settings.token_counter
        budget = max(0, self.settings.history_budget_tokens - sum(message_tokens(m, counter) for m in system))
        listed = [BREADCRUMB, *tail] if offset else tail
        shift = offset - (1 if offset else 0)
        trimmed = trim_history(listed, budget, counter=counter)
        dropped = [shift + i for i in trimmed.dropped_indices]
        end = (dropped[-1] + 1) if dropped else offset
        self.last_trim = TrimReport(
            omitted_range=(0 if offset else dropped[0], end) if (offset or dropped) else None,
            messages_dropped=offset + len(dropped),
            turns_dropped=trimmed.turns_dropped,
            tokens_before=trimmed.tokens_before,
            tokens_after=trimmed.tokens_after,
        )
        if self.last_trim.omitted_range is not None and listening(self.events):
            emit(
                self.events,
                HistoryTrimmed(
                    session_id=self.session.id,
                    messages_dropped=self.last_trim.messages_dropped,
                    turns_dropped=trimmed.turns_dropped,
                    tokens_before=trimmed.tokens_before,
                    tokens_after=trimmed.tokens_after,
                ),
            )
        if context is None:
            context = self._recall(self._user_text()) if self.id is not None else ""
        return inject_memory_context([*system, *trimmed.messages], context)

    def omitted_messages(self, start: int | None = None, end: int | None = None) -> list[StoredMessage]:
        """Transcript positions ``start <= p < end`` (default: what the last prompt left out), bounded."""
        if start is None:
            if self.last_trim is None or self.last_trim.omitted_range is None:
                return []
            start, end = self.last_trim.omitted_range
        return self.transcript.messages(start, end)

    def record_tool_calls(self, calls: Sequence[ToolCallRequest], content: str = "") -> None:
        """Record the assistant message that asked for tools; a ``ToolCallStarted`` event per call."""
        self._expect("open", "record_tool_calls")
        calls = tuple(calls)
        if not calls:
            raise ValidationError("record_tool_calls needs at least one tool call")
        clash = [c.id for c in calls if c.id in self._pending]
        if clash:
            raise ValidationError(f"tool call id {clash[0][:64]!r} is already pending in this turn")
        if self._results + len(self._pending) + len(calls) > self.settings.max_tool_results:
            raise LimitExceededError(
                f"a turn may ask for at most {self.settings.max_tool_results} tool calls"
            )
        self.transcript.append(Message(role="assistant", content=content, tool_calls=calls))
        self._pending.update({c.id: c.name for c in calls})
        if listening(self.events):
            from ..tools.events import summarize_arguments

            for c in calls:
                emit(
                    self.events,
                    ToolCallStarted(
                        tool_name=c.name,
                        call_id=c.id,
                        arguments=summarize_arguments(c.name, c.arguments),
                        origin=self.origin.value,
                    ),
                )

    def record_tool_result(
        self,
        call_id: str,
        tool_name: str,
        result: ToolResult,
        *,
        arguments: str | Mapping[str, Any] = "{}",
        duration_ms: float | None = None,
    ) -> Message:
        """Bound the result, record it as the answer to a pending call, and emit a ToolCall event.

        The event pairs with the call's ``ToolCallStarted`` by ``call_id``; it shows ``arguments``
        summarised and ``result.error`` as a code (``tools.events``), never their text.
        """
        self._expect("open", "record_tool_result")
        if call_id not in self._pending:
            raise ValidationError(f"no pending tool call {str(call_id)[:64]!r} in this turn")
        if self._pending[call_id] != tool_name:
            raise ValidationError(
                f"tool call {call_id[:64]!r} asked for {self._pending[call_id]!r}, not {tool_name!r}"
            )
        if self._results >= self.settings.max_tool_results:
            raise LimitExceededError(
                f"a turn may record at most {self.settings.max_tool_results} tool results"
            )
        processed = process_tool_result(tool_name, result, self.settings.tool_limits)
        message = Message(role="tool", content=tool_message_content(processed), tool_call_id=call_id)
        self.transcript.append(message)
        del self._pending[call_id]
        self._results += 1
        if listening(self.events):
            from ..tools.events import error_code, summarize_arguments

            emit(
                self.events,
                ToolCall(
                    tool_name=tool_name,
                    arguments=summarize_arguments(tool_name, arguments),
                    success=result.success,
                    output_chars=len(result.output),
                    truncated=processed.truncated,
                    call_id=call_id,
                    error=error_code(result.error),
                    duration_ms=float(duration_ms or 0.0),
                    origin=self.origin.value,
                ),
            )
        return message

    def run_memory_tool(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> Message:
        """Run one of stratamem's memory tools for a pending call, with this turn's origin, and record it.

        The call's events are the turn's pair (``record_tool_calls`` started it, ``record_tool_result``
        ends it), so ``execute`` adds only the store or recall events the call caused.
        """
        from ..tools import execute

        started = time.perf_counter()
        text = execute(
            self.session,
            name,
            dict(arguments),
            policy=self.policy,
            origin=self.origin.value,
            report_call=False,
        )
        if text is None:
            raise ValidationError(f"{name!r} is not a memory tool")
        success = not text.startswith('{"error"')
        elapsed = (time.perf_counter() - started) * 1000
        return self.record_tool_result(
            call_id,
            name,
            ToolResult(success, text if success else "", None if success else text),
            arguments=dict(arguments),
            duration_ms=elapsed,
        )

    def record_usage(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        *,
        cost_usd: Decimal | float | str | None = None,
    ) -> UsageReport:
        """Add one model call to the store's ledger; the budget status when a budget is set.

        Allowed after ``end`` too: the final answer's call is usually reported after it.
        """
        if self._state == "new":
            raise TurnStateError("cannot record usage: the turn has not begun")
        record = self.ledger.record(
            model, input_tokens, output_tokens, cached_input_tokens, cost_usd=cost_usd
        )
        budget = self.ledger.check_budget(self.settings.budget) if self.settings.budget else None
        return UsageReport(record, budget)

    def end(self, assistant_message: str) -> None:
        """Record the final assistant message and close the turn."""
        self._expect("open", "end")
        if not isinstance(assistant_message, str):
            raise ValidationError("assistant_message must be a string")
        self.transcript.append(Message(role="assistant", content=assistant_message))
        self._state = "ended"

    @property
    def state(self) -> str:
        return self._state

    @property
    def pending_calls(self) -> dict[str, str]:
        return dict(self._pending)

    # ------------------------------------------------------------------ helpers

    def _recall(self, query: str) -> str:
        """The memory context as the turn found it, as far as it is still there.

        Memory the turn's own time added is left out — its autosaved message, and whatever was
        created after the user message — so the block does not change as the turn writes.
        """
        began, own, category = self._began, autosave_key(query), self.settings.autosave.category

        def new_in_this_turn(memory: Memory) -> bool:
            if began is not None and memory.created_at > began:
                return True
            return memory.key == own and memory.category == category and memory.session_id == self.session.id

        return recall_block(
            self.session,
            query,
            self.origin.value,
            self.settings.context,
            self.session.store.now(),
            policy=self.policy,
            events=self.events,
            exclude=new_in_this_turn,
        ).block

    def _user_text(self) -> str:
        rows = self.transcript.messages(self.id or 0, (self.id or 0) + 1)
        return rows[0].message.content if rows else ""

    def _expect(self, state: str, action: str) -> None:
        if self._state != state:
            raise TurnStateError(f"cannot {action}: the turn is {self._state}")
