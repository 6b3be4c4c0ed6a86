"""Conversation scope: ``conversation`` memories belong to the conversation that wrote them.

The conversation is the stratamem session that saved the memory (the
memory's ``session_id``; ``reset()`` starts a new one). Two rules, applied on
top of the store's own lattice filtering (they only ever hide more):

- recall into a turn's ``[Memory context]`` injects conversation memories of
  the turn's own session only;
- reads from autonomous origins (``cron``, ``daemon``, ``subturn``) — recall
  and the memory tools alike — see no conversation memories at all: a
  scheduled job is nobody's conversation.

Searches over-fetch (the store's maximum page) before filtering, so a scoped
search still returns up to ``max_results`` hits.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .models import Hit, Memory

if TYPE_CHECKING:
    from .session import Session

CONVERSATION = "conversation"
AUTONOMOUS_ORIGINS = frozenset({"cron", "daemon", "subturn"})
_OVERFETCH = 100  # the store's largest page


def is_autonomous(origin: str | None) -> bool:
    return origin in AUTONOMOUS_ORIGINS


def in_scope(memory: Memory, session_id: str, origin: str | None) -> bool:
    """May a read for ``session_id`` from ``origin`` see ``memory`` under the conversation rules?"""
    if memory.category != CONVERSATION:
        return True
    return not is_autonomous(origin) and memory.session_id == session_id


class ScopedSession:
    """A session whose reads leave out conversation memories (for autonomous origins).

    Everything else is the wrapped session's: writes, taint, audit.
    """

    def __init__(self, session: Session, origin: str | None) -> None:
        self._session = session
        self._origin = origin

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def _keep(self, memory: Memory) -> bool:
        return memory.category != CONVERSATION

    def get(self, key: str) -> Memory | None:
        found = self._session.get(key)
        return found if found is None or self._keep(found) else None

    def list(self, *args: Any, **options: Any) -> list[Memory]:
        """The session's listing without conversation memories, left out in the store so pages stay exact."""
        return self._session.list(*args, without_category=CONVERSATION, **options)

    def recent(self, *args: Any, **options: Any) -> builtins.list[Memory]:
        return self._session.recent(*args, without_category=CONVERSATION, **options)

    def search(self, query: str, max_results: int = 10) -> Sequence[Hit]:
        limit = max_results if isinstance(max_results, int) and not isinstance(max_results, bool) else 10
        hits = self._session.search(query, max_results=_OVERFETCH)
        return [h for h in hits if self._keep(h.memory)][: max(1, min(limit, _OVERFETCH))]


def scoped(session: Session, origin: str | None) -> Session | ScopedSession:
    """The session as a read from ``origin`` may use it."""
    return ScopedSession(session, origin) if is_autonomous(origin) else session
