"""Server state shared by every server on one store (``sql/server_state.py``), each call its own transaction.

Bindings, console sign-ins and idempotency entries are the server's bookkeeping,
not a session's: they run as operator transactions (no session bound, no audit
event of their own; what they stand for — opening a console, a write — is
audited where it happens). On the Markdown backend they live in the sidecar,
which is single-host like the rest of that store.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from .sql import server_state as sql
from .sql.server_state import Entry, digest

if TYPE_CHECKING:
    from .protocol import Backend

__all__ = ["Entry", "digest", "drop", "get", "purge", "put"]


def get(backend: Backend, kind: str, key: str, now: datetime) -> Entry | None:
    """The live entry stored under ``key`` (a ``digest``), or None."""
    return backend.transactions.operator(now, lambda tx: sql.get_body(tx, kind, key), read_only=True)


def put(backend: Backend, kind: str, key: str, entry: Entry, now: datetime, *, replace: bool = True) -> Entry:
    """Store ``entry``; with ``replace`` False a live entry already there wins and is returned."""
    return backend.transactions.operator(now, lambda tx: sql.put_body(tx, kind, key, entry, replace=replace))


def drop(backend: Backend, kind: str, key: str, now: datetime) -> None:
    backend.transactions.operator(now, lambda tx: sql.drop_body(tx, kind, key))


def purge(backend: Backend, now: datetime) -> int:
    """Remove every expired entry; how many."""
    return backend.transactions.operator(now, sql.purge_body)
