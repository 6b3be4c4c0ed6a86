"""Fitting a session's history into a token budget.

The unit of trimming is the *turn* (a user message and everything up to the
next one), dropped oldest first, because half a turn reads to the model as
a conversation that makes no sense.  Tool calls and their results must stay
paired (chat APIs reject either alone), so an orphan sweep runs before and
after the cut.  Trimming is a pure function of the message list; the
transcript store keeps everything that was dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .errors import ValidationError
from .messages import Message
from .observe import EventBus, HistoryTrimmed, emit

__all__ = [
    "BREADCRUMB",
    "MESSAGE_OVERHEAD_TOKENS",
    "TokenCounter",
    "TrimResult",
    "estimate_tokens",
    "is_breadcrumb",
    "message_tokens",
    "split_turns",
    "sweep_orphans",
    "trim_history",
]

TokenCounter = Callable[[str], int]

MESSAGE_OVERHEAD_TOKENS = 4
"""Per-message framing (role, separators) that every chat format adds."""

BREADCRUMB = Message(
    role="system",
    content=(
        "[History trimmed] Earlier turns of this conversation were omitted to fit "
        "the context window; they remain in the session transcript."
    ),
)

_Indexed = tuple[int, Message]


def estimate_tokens(text: str) -> int:
    """About four characters per token: cheap and close enough for budgeting."""
    return (len(text) + 3) // 4


def message_tokens(message: Message, counter: TokenCounter = estimate_tokens) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + counter(message.content)
    for call in message.tool_calls:
        tokens += counter(call.name) + counter(call.arguments)
    return tokens


def is_breadcrumb(message: Message) -> bool:
    return message.role == BREADCRUMB.role and message.content == BREADCRUMB.content


def _sweep(items: Sequence[_Indexed]) -> list[_Indexed]:
    """Keep a tool call only if a later message answers it, and vice versa."""
    pending: dict[str, int] = {}
    matched_calls: set[tuple[int, str]] = set()
    matched_results: set[int] = set()
    for pos, (_, message) in enumerate(items):
        if message.role == "assistant":
            for call in message.tool_calls:
                pending[call.id] = pos
        elif message.role == "tool" and message.tool_call_id is not None:
            owner = pending.pop(message.tool_call_id, None)
            if owner is not None:
                matched_calls.add((owner, message.tool_call_id))
                matched_results.add(pos)

    kept: list[_Indexed] = []
    for pos, (index, message) in enumerate(items):
        if message.role == "tool":
            if pos in matched_results:
                kept.append((index, message))
            continue
        if message.tool_calls:
            seen: set[str] = set()
            calls = []
            for call in message.tool_calls:
                if (pos, call.id) in matched_calls and call.id not in seen:
                    seen.add(call.id)
                    calls.append(call)
            if len(calls) != len(message.tool_calls):
                if not calls and not message.content:
                    continue
                message = replace(message, tool_calls=tuple(calls))
        kept.append((index, message))
    return kept


def sweep_orphans(messages: Sequence[Message]) -> list[Message]:
    """Remove tool results without a matching call and calls without a result.

    An assistant message left with neither content nor calls is removed.
    """
    return [message for _, message in _sweep(list(enumerate(messages)))]


def split_turns(messages: Sequence[Message]) -> list[list[int]]:
    """Indices of the non-system messages, grouped into turns.

    A turn starts at a user message; anything before the first user message
    forms a turn of its own.  System messages belong to no turn.
    """
    turns: list[list[int]] = []
    for index, message in enumerate(messages):
        if message.role == "system":
            continue
        if message.role == "user" or not turns:
            turns.append([])
        turns[-1].append(index)
    return turns


@dataclass(frozen=True, slots=True)
class TrimResult:
    """The trimmed messages and what went.

    ``dropped_indices`` are positions in the input list; when the input is a
    session's stored transcript they equal the transcript positions, so
    ``omitted_range`` can be passed to ``Transcript.messages`` to fetch
    the dropped turns back.
    """

    messages: tuple[Message, ...]
    dropped_indices: tuple[int, ...]
    turns_dropped: int
    tokens_before: int
    tokens_after: int

    @property
    def messages_dropped(self) -> int:
        return len(self.dropped_indices)

    @property
    def omitted_range(self) -> tuple[int, int] | None:
        if not self.dropped_indices:
            return None
        return self.dropped_indices[0], self.dropped_indices[-1] + 1


def trim_history(
    messages: Sequence[Message],
    budget_tokens: int,
    *,
    counter: TokenCounter = estimate_tokens,
    session_id: str = "",
    events: EventBus | None = None,
) -> TrimResult:
    """Drop whole turns, oldest first, until the history fits ``budget_tokens``.

    System messages and the newest turn are always kept, even over budget.
    One breadcrumb (never more, however often a list is re-trimmed) is put
    after the leading system messages when anything is omitted.
    """
    if budget_tokens < 0:
        raise ValidationError("budget_tokens must be >= 0")

    # Each message is counted once; a message _sweep rebuilt (fewer tool calls) is counted again.
    base = [message_tokens(m, counter) for m in messages]

    def cost(index: int, message: Message) -> int:
        return base[index] if message is messages[index] else message_tokens(message, counter)

    tokens_before = sum(base)
    crumbs = [is_breadcrumb(m) for m in messages]
    had_breadcrumb = any(crumbs)
    items = _sweep([(i, m) for i, m in enumerate(messages) if not crumbs[i]])

    plain = [message for _, message in items]
    item_costs = [cost(i, m) for i, m in items]
    turns = split_turns(plain)
    total = sum(item_costs)
    crumb_cost = message_tokens(BREADCRUMB, counter)
    dropped_turns = 0
    while len(turns) - dropped_turns > 1:
        needs_crumb = had_breadcrumb or dropped_turns > 0
        if total + (crumb_cost if needs_crumb else 0) <= budget_tokens:
            break
        total -= sum(item_costs[pos] for pos in turns[dropped_turns])
        dropped_turns += 1

    dropped_positions = {pos for turn in turns[:dropped_turns] for pos in turn}
    kept = _sweep([item for pos, item in enumerate(items) if pos not in dropped_positions])
    result = [message for _, message in kept]
    tokens_after = sum(cost(i, m) for i, m in kept)
    if had_breadcrumb or dropped_turns:
        result.insert(_breadcrumb_position(result), BREADCRUMB)
        tokens_after += crumb_cost

    kept_indices = {index for index, _ in kept}
    dropped = tuple(i for i in range(len(messages)) if i not in kept_indices and not crumbs[i])
    trimmed = TrimResult(
        messages=tuple(result),
        dropped_indices=dropped,
        turns_dropped=dropped_turns,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
    )
    if dropped:
        emit(
            events,
            HistoryTrimmed(
                session_id=session_id,
                messages_dropped=trimmed.messages_dropped,
                turns_dropped=dropped_turns,
                tokens_before=trimmed.tokens_before,
                tokens_after=trimmed.tokens_after,
            ),
        )
    return trimmed


def _breadcrumb_position(messages: Sequence[Message]) -> int:
    """Just after the system messages that open the list."""
    position = 0
    while position < len(messages) and messages[position].role == "system":
        position += 1
    return position
