"""Rows as PostgreSQL stores them, and back to the records callers see.

Same encoding as the SQLite backend (integer microseconds, JSON text for tags
and audit lists) so ``dump`` rows are interchangeable between backends. One
difference: PostgreSQL text cannot hold NUL, which the contract allows in
content (and which free-text fields such as escalation reasons or caller-chosen
session ids may contain). Those fields go through ``enc``/``dec``, a reversible
escape that leaves every string without NUL or U+E000 unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, overload

from ...models import AuditEvent, Memory
from ..sql import rows

_ESC = "\ue000"
_ESCAPED = re.compile(_ESC + "(.)", re.DOTALL)

MEMORY_COLUMNS = rows.MEMORY_COLUMNS


@overload
def enc(text: str) -> str: ...
@overload
def enc(text: None) -> None: ...
def enc(text: str | None) -> str | None:
    """Text safe for a PostgreSQL text column (NUL is escaped, and so is the escape character)."""
    if text is None or ("\x00" not in text and _ESC not in text):
        return text
    return text.replace(_ESC, _ESC + _ESC).replace("\x00", _ESC + "0")


@overload
def dec(text: str) -> str: ...
@overload
def dec(text: None) -> None: ...
def dec(text: str | None) -> str | None:
    """The stored text back as written (``enc`` reversed)."""
    if text is None or _ESC not in text:
        return text
    return _ESCAPED.sub(lambda m: _ESC if m.group(1) == _ESC else "\x00", text)


def row_to_memory(row: Sequence[Any]) -> Memory:
    """``MEMORY_COLUMNS`` as stored here to a Memory (content and source session decoded)."""
    row = list(row[:12])
    row[4], row[7] = dec(row[4]), dec(row[7])
    return rows.row_to_memory(row)


def row_to_event(row: Sequence[Any]) -> AuditEvent:
    """An ``audit`` row (table column order) to an AuditEvent; raises ValueError/KeyError when it does not parse."""
    row = list(row)
    row[2] = dec(row[2])
    return rows.row_to_event(row)
