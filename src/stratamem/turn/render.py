"""``render_memory_context``: the ``[Memory context]`` block for any session a runtime holds.

A real stratamem :class:`~stratamem.session.Session` always recalls through the
policy layer and its conversation scope (``recall.recall_block``). Runtimes
that test or prototype with a stand-in (anything with ``search``) get the
filter-only path: origin, noise, decay and size, no store and no policy.

Telling the two apart needs ``Session`` itself, so this choice lives here and
not in ``recall``: a session's turn imports ``recall``, and ``recall`` then
never needs the session module back (no import circle).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from ..session import Session
from .context import (
    Clock,
    ContextConfig,
    Origin,
    SearchableSession,
    format_memory_block,
    parse_origin,
    recall_policy,
    select_entries,
)
from .observe import EventBus, MemoryRecall, emit, error_summary
from .recall import block_lines, recall_block

__all__ = ["render_memory_context"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


_DEFAULT_CONFIG = ContextConfig()


def render_memory_context(
    session: SearchableSession,
    user_message: str,
    origin: Origin | str,
    session_scopes: Sequence[str] = (),
    config: ContextConfig = _DEFAULT_CONFIG,
    *,
    events: EventBus | None = None,
    clock: Clock = _utc_now,
) -> str:
    """Recall for ``user_message`` and render the block to prepend, or ``""``.

    Emits exactly one :class:`MemoryRecall` event. A real stratamem session
    always recalls through the policy layer and conversation scope
    (``recall.recall_block``); only stand-ins without a store take the
    filter-only path below.
    """
    if isinstance(session, Session):
        return recall_block(
            session, user_message, parse_origin(origin).value, config, clock(), events=events
        ).block
    policy = recall_policy(origin, session_scopes, suppress=config.suppress)
    origin_name = parse_origin(origin).value
    if not policy.inject or config.max_entries == 0 or not user_message.strip():
        emit(events, MemoryRecall(origin=origin_name, entry_count=0, success=True, suppressed=True))
        return ""
    try:
        hits = session.search(user_message, max_results=config.search_limit)
        memories = select_entries(hits, config, clock(), include_conversation=policy.include_conversation)
        lines = block_lines(session, memories, user_message, config)
    except Exception as exc:  # noqa: BLE001 - any failure becomes an event; recall never breaks the turn
        emit(
            events,
            MemoryRecall(origin=origin_name, entry_count=0, success=False, error=error_summary(exc)),
        )
        return ""
    emit(events, MemoryRecall(origin=origin_name, entry_count=len(lines), success=True))
    return format_memory_block(lines)
