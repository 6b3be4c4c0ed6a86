"""Conversation scope: ``conversation`` memories belong to the conversation that wrote them.

The conversation is the stratamem session that saved the memory (the
memory's ``session_id``; ``reset()`` starts a new one). One rule, applied by
the store to every read a session makes — ``get``, ``list``, ``recent``,
``search`` in every mode, and so every tool, REST and MCP read, recall into a
turn, the CLI's reads and the LangGraph store — on top of the lattice (it only
ever hides more):

- ``own`` (every session read): conversation memories of this session only;
  another conversation's are absent from the read, exactly as a record above
  the taint is: they shadow nothing and count in no BM25 statistic;
- ``none`` (reads from autonomous origins — ``cron``, ``daemon``,
  ``subturn`` — recall and the memory tools alike): no conversation memories
  at all, a scheduled job is nobody's conversation;
- ``all``: every conversation memory the lattice allows. Only the operator's
  audited views use it (the console's search playground); no tool or
  transport can ask for it.

The backends build the rule into their visible-view SQL (``sqlite_rank.Scope``,
``pg_search.Scope``) from the fragments below, so no surface can forget it.
Writes are the lattice's alone: a save or delete at a slot acts on the
version there whatever its category (the console deletes through the agent's
own delete).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from .errors import ValidationError
from .models import Hit, Memory

if TYPE_CHECKING:
    from .session import Session

CONVERSATION = "conversation"
AUTONOMOUS_ORIGINS = frozenset({"cron", "daemon", "subturn"})

Conversations = Literal["own", "none", "all"]
OWN: Conversations = "own"
NONE: Conversations = "none"
ALL: Conversations = "all"
_MODES: tuple[Conversations, ...] = (OWN, NONE, ALL)


def is_autonomous(origin: str | None) -> bool:
    return origin in AUTONOMOUS_ORIGINS


def for_origin(origin: str | None) -> Conversations:
    """The conversation scope of a read made from ``origin``."""
    return NONE if is_autonomous(origin) else OWN


def check(conversations: object) -> Conversations:
    if conversations not in _MODES:
        raise ValidationError(f"conversations must be one of {', '.join(_MODES)}")
    return conversations


def readable(conversations: Conversations, alias: str, session: str) -> str:
    """SQL: may the session read the row ``alias``? ``session`` is the placeholder of the reading session's id.

    Written the same for SQLite and PostgreSQL. A conversation memory with no
    session (imported) belongs to no live conversation: only ``all`` reads it.
    """
    if conversations == ALL:
        return "1 = 1"
    if conversations == NONE:
        return f"{alias}.category <> '{CONVERSATION}'"
    return f"({alias}.category <> '{CONVERSATION}' OR {alias}.session_id = {session})"


def unreadable(conversations: Conversations, alias: str, session: str) -> str | None:
    """SQL: the conversation memories the rule hides (the complement of ``readable``), or None for none.

    Its literal ``category = 'conversation' AND deleted_us IS NULL`` terms, added
    by the caller, let the ``memories_conversation`` partial index answer it.
    """
    if conversations == ALL:
        return None
    if conversations == NONE:
        return f"{alias}.category = '{CONVERSATION}'"
    return f"{alias}.category = '{CONVERSATION}' AND coalesce({alias}.session_id, '') <> {session}"


class ScopedSession:
    """A session whose reads run under the ``none`` rule (for autonomous origins).

    Everything else is the wrapped session's: writes, taint, audit.
    """

    def __init__(self, session: Session, origin: str | None) -> None:
        self._session = session
        self._origin = origin

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def get(self, key: str) -> Memory | None:
        return self._session.get(key, conversations=NONE)

    def list(self, *args: Any, **options: Any) -> builtins.list[Memory]:
        return self._session.list(*args, conversations=NONE, **options)

    def recent(self, *args: Any, **options: Any) -> builtins.list[Memory]:
        return self._session.recent(*args, conversations=NONE, **options)

    def search(
        self, query: str, max_results: int = 10, mode: str | None = None, *, expand: bool = False
    ) -> Sequence[Hit]:
        return self._session.search(query, max_results, mode, conversations=NONE, expand=expand)


def scoped(session: Session, origin: str | None) -> Session | ScopedSession:
    """The session as a read from ``origin`` may use it."""
    return ScopedSession(session, origin) if is_autonomous(origin) else session
