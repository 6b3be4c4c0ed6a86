"""One agent turn, wired from the pieces of this package.

The helper holds no policy of its own: it only calls the other modules in
the right order, so that a runtime that needs a different order can call
them directly instead.  The transcript store is the single source of truth;
the prompt is rebuilt from it (trimmed, with memory context) on demand, so
the injected block is never written back and never stacks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from ..policy.engine import Policy
from .autosave import AutosavePolicy, autosave_user_message
from .context import Clock, ContextConfig, Origin, inject_memory_context, parse_origin, render_memory_context
from .costs import CostLedger, CostRecord
from .errors import ValidationError
from .history import HistoryStore
from .messages import Message, ToolCallRequest
from .observe import EventBus, ToolCall, emit
from .tool_results import ToolResult, ToolResultLimits, process_tool_result, tool_message_content
from .trim import TokenCounter, TrimResult, estimate_tokens, message_tokens, trim_history

__all__ = ["Turn", "TurnSettings"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class TurnSession(Protocol):
    """What a turn needs from a memory session (``taint`` is read if present)."""

    def search(self, query: str, max_results: int) -> Sequence[Any]: ...

    def save(self, key: str, content: str, category: str = ...) -> object: ...


@dataclass(frozen=True, slots=True)
class TurnSettings:
    context: ContextConfig = field(default_factory=ContextConfig)
    autosave: AutosavePolicy = field(default_factory=AutosavePolicy)
    tool_limits: ToolResultLimits = field(default_factory=ToolResultLimits)
    history_budget_tokens: int = 16_000
    token_counter: TokenCounter = estimate_tokens


class Turn:
    """begin -> (record_tool_calls -> record_tool_result)* -> end, plus usage."""

    def __init__(
        self,
        session: TurnSession,
        history: HistoryStore,
        session_id: str,
        origin: Origin | str,
        *,
        settings: TurnSettings = TurnSettings(),
        session_scopes: Sequence[str] = (),
        system_prompt: str | None = None,
        events: EventBus | None = None,
        costs: CostLedger | None = None,
        agent_id: str = "",
        clock: Clock = _utc_now,
        policy: Policy | None = None,
    ) -> None:
        self.session = session
        self.history = history
        self.session_id = session_id
        self.origin = parse_origin(origin)
        self.settings = settings
        self.session_scopes = tuple(session_scopes)
        self.system_prompt = system_prompt
        self.events = events
        self.costs = costs
        self.agent_id = agent_id
        self._clock = clock
        self.policy = policy  # the operator's policy: every memory write of the turn passes its gate
        self._context = ""
        self._state = "new"
        self.last_trim: TrimResult | None = None

    def begin(self, user_message: str) -> list[Message]:
        """Record the user message, recall, autosave; return the prompt to send."""
        self._expect("new", "begin")
        self._state = "open"
        self._append(Message(role="user", content=user_message))
        # Recall before autosaving, so the context reflects memory as the turn found it.
        self._context = render_memory_context(
            self.session,
            user_message,
            self.origin,
            self.session_scopes,
            self.settings.context,
            events=self.events,
            clock=self._clock,
        )
        autosave_user_message(self.session, user_message, self.origin, self.settings.autosave, events=self.events,
                              policy=self.policy)
        return self.messages()

    def messages(self) -> list[Message]:
        """The prompt to send now: trimmed history with the memory context.

        The system prompt is kept out of the trimmed list (and its tokens
        out of the budget) so trim positions equal transcript positions.
        """
        system = [Message(role="system", content=self.system_prompt)] if self.system_prompt else []
        counter = self.settings.token_counter
        budget = max(0, self.settings.history_budget_tokens - sum(message_tokens(m, counter) for m in system))
        self.last_trim = trim_history(
            self.history.transcript(self.session_id),
            budget,
            counter=counter,
            session_id=self.session_id,
            events=self.events,
        )
        return inject_memory_context([*system, *self.last_trim.messages], self._context)

    def omitted_messages(self) -> list[Message]:
        """The turns the last trim left out, fetched back from the transcript."""
        if self.last_trim is None or self.last_trim.omitted_range is None:
            return []
        start, end = self.last_trim.omitted_range
        dropped = set(self.last_trim.dropped_indices)
        return [s.message for s in self.history.messages(self.session_id, start, end) if s.seq in dropped]

    def record_tool_calls(self, calls: Sequence[ToolCallRequest], content: str = "") -> None:
        """Record the assistant message that asked for tools."""
        self._expect("open", "record_tool_calls")
        self._append(Message(role="assistant", content=content, tool_calls=tuple(calls)))

    def record_tool_result(
        self,
        call_id: str,
        tool_name: str,
        result: ToolResult,
        *,
        arguments: str | Mapping[str, Any] = "{}",
    ) -> Message:
        """Bound the result, record it as a tool message, and emit a ToolCall event."""
        self._expect("open", "record_tool_result")
        processed = process_tool_result(tool_name, result, self.settings.tool_limits)
        message = Message(role="tool", content=tool_message_content(processed), tool_call_id=call_id)
        self._append(message)
        emit(
            self.events,
            ToolCall(
                tool_name=tool_name,
                arguments=arguments,
                success=result.success,
                output_chars=len(result.output),
                truncated=processed.truncated,
                call_id=call_id,
                error=result.error or "",
            ),
        )
        return message

    def record_usage(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        *,
        cost_usd: Decimal | None = None,
    ) -> CostRecord | None:
        """Add one model call to the cost ledger (None when there is no ledger)."""
        if self.costs is None:
            return None
        return self.costs.record(
            model,
            input_tokens,
            output_tokens,
            cached_input_tokens,
            session_id=self.session_id,
            agent_id=self.agent_id,
            cost_usd=cost_usd,
            time=self._clock(),
        )

    def end(self, assistant_message: str) -> None:
        """Record the final assistant message and close the turn."""
        self._expect("open", "end")
        self._append(Message(role="assistant", content=assistant_message))
        self._state = "ended"

    def _append(self, message: Message) -> None:
        self.history.append(self.session_id, message, taint=getattr(self.session, "taint", None))

    def _expect(self, state: str, action: str) -> None:
        if self._state != state:
            raise ValidationError(f"cannot {action}: the turn is {self._state}")
