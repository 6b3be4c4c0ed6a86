"""Sessions' operator records on any backend: the change of a session's limits and its taint history, each a
body of ``sql/sessions.py`` run through ``backend.transactions``.

Opening, resuming and escalating stay the backend's own (``Backend.open_session``/``escalate``):
each binds its transaction to the session in its engine's way. What is here is bound to no
session: the limits change is an operator act, its event chained with it (``session.limits``),
and the history is read in a read-only operator snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..levels import Level
from ..models import TaintEvent
from .records import SessionRecord
from .sql import sessions as sql

if TYPE_CHECKING:
    from .protocol import Backend


def set_limits(
    backend: Backend, session_id: str, clearance: Level | None, peers: Sequence[str] | None, now: datetime
) -> SessionRecord:
    """A session's clearance and/or peers (None keeps the current one); refused above its live taint."""
    return backend.transactions.operator(now, lambda tx: sql.limits_body(tx, session_id, clearance, peers))


def taint_history(backend: Backend, session_id: str) -> list[TaintEvent]:
    """The session's escalations, oldest first (none for an unknown session)."""
    now = datetime.now(UTC)  # a read appends nothing: its time is only the context's
    return backend.transactions.operator(now, lambda tx: sql.history_body(tx, session_id), read_only=True)
