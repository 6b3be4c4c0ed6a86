"""The audit chain read whole, written once for both SQL engines: its tip, and what verification reads.

The chain is written by each backend's own append (the tip read and moved inside the writing
transaction); these bodies only read it, in a read-only operator snapshot
(``storage/audit_store.py``). The head record each engine keeps beside the log — the sequence
and hash of the newest event, so that events cut off the end are noticed — is read through the
dialect's ``audit_head`` query, as ``seq:hash`` text.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ...audit import GENESIS
from ...models import AuditEvent
from .rows import AUDIT_COLUMNS, stored_event

if TYPE_CHECKING:
    from ..transaction import Tx

# The chain's events in order, or the sequence number of the first one whose stored fields no longer parse.
Chain = list[AuditEvent] | int


def tip_body(tx: Tx[Any]) -> tuple[int, str]:
    """(sequence, hash) of the newest event, (0, GENESIS) when the log is empty."""
    row = tx.conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    return (row[0], row[1]) if row else (0, GENESIS)


def chain_body(tx: Tx[Any]) -> tuple[tuple[int, str] | None, Chain]:
    """The head record (None when there is none) and every event in sequence order.

    An event whose stored fields no longer parse has been edited: its sequence number stands for the chain.
    """
    head_row = tx.conn.execute(tx.dialect.audit_head).fetchone()
    head = None
    if head_row:
        seq, _, digest = head_row[0].partition(":")
        head = (int(seq), digest)
    events = []
    for row in tx.conn.execute(f"SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq"):
        try:
            events.append(stored_event(row, tx.dialect.decode))
        except (ValueError, KeyError, TypeError, json.JSONDecodeError):
            return head, int(row[0])
    return head, events
