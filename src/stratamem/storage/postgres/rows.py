"""Rows as PostgreSQL stores them, and back to the records callers see.

Same encoding as the SQLite backend (integer microseconds, JSON text for tags
and audit lists) so ``dump`` rows are interchangeable between backends. One
difference: PostgreSQL text cannot hold NUL, which the contract allows in
content (and which free-text fields such as escalation reasons or caller-chosen
session ids may contain). Those fields go through ``enc``/``dec`` (``storage/sql/dialect.py``), a
reversible escape that leaves every string without NUL or U+E000 unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...models import AuditEvent, Memory
from ..sql import rows
from ..sql.dialect import dec, enc

__all__ = ["MEMORY_COLUMNS", "dec", "enc", "row_to_event", "row_to_memory"]

MEMORY_COLUMNS = rows.MEMORY_COLUMNS


def row_to_memory(row: Sequence[Any]) -> Memory:
    """``MEMORY_COLUMNS`` as stored here to a Memory (content and source session decoded)."""
    row = list(row[: rows.MEMORY_WIDTH])
    row[4], row[7] = dec(row[4]), dec(row[7])
    return rows.row_to_memory(row)


def row_to_event(row: Sequence[Any]) -> AuditEvent:
    """An ``audit`` row (table column order) to an AuditEvent; raises ValueError/KeyError when it does not parse."""
    row = list(row)
    row[2] = dec(row[2])
    return rows.row_to_event(row)
