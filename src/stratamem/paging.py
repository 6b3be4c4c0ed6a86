"""Bounded, cursor-paged listings: page sizes, the cursor format, and what a backend is asked for.

Listings grow with the store, so every surface an agent or a network client
reaches (tools, MCP, REST, the CLI's stdout) asks for one page at a time:
``DEFAULT_PAGE_SIZE`` memories unless told otherwise, never more than
``MAX_PAGE_SIZE``. The answer says when more exist with a cursor to pass back.

Order and cursor. A listing is ordered by (agent order, key): the session's
own agent first, then its peers in order, keys in code point order (SQLite's
BINARY collation, PostgreSQL's ``"C"`` collation, Python's ``str`` order —
one order everywhere). The cursor names the last memory of the page, by
agent id and key, and the next page starts strictly after that position. So:

- it encodes only a memory the session was just shown, never anything
  invisible;
- a page depends only on the session's visible view and the cursor: two stores
  that differ only by invisible records page identically (tested in
  ``tests/test_paging.py`` as a property, like ``tests/conformance/test_noninterference.py``);
- saves and deletes between pages never repeat or skip a memory that stayed
  in place (a key inserted before the cursor is simply not on later pages).

The cursor is opaque to clients (URL-safe base64 of a small JSON array) but
not secret and not signed: forging one only moves the starting position
inside what the session may already see.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from .errors import ValidationError
from .models import Memory

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
MAX_CURSOR_CHARS = 2048
CURSOR_PREFIX = "c1."
OFFSET_PREFIX = "o1."
MAX_OFFSET = 1_000_000


class Page(list[Memory]):
    """A list of memories that also says where the next page starts (``None``: this was the last)."""

    next_cursor: str | None

    def __init__(self, memories: list[Memory] = (), next_cursor: str | None = None) -> None:  # type: ignore[assignment]
        super().__init__(memories)
        self.next_cursor = next_cursor

    @property
    def more(self) -> bool:
        return self.next_cursor is not None


@dataclass(frozen=True, slots=True)
class ListQuery:
    """What a backend lists for a session: filters applied in SQL, then at most ``limit`` rows.

    ``after`` is a cursor (checked when the backend resolves it against the
    session's agents). ``newest_first``
    orders by update time instead (no cursor; used for "the N most recent").
    Times are epoch microseconds on ``created_at`` (``since_us``/``until_us``) and on ``occurred_at``
    (``occurred_since_us``/``occurred_until_us``), both ends inclusive.
    """

    tag: str | None = None
    without_tag: str | None = None
    category: str | None = None
    without_category: str | None = None
    saved_by: str | None = None
    since_us: int | None = None
    until_us: int | None = None
    occurred_since_us: int | None = None
    occurred_until_us: int | None = None
    limit: int | None = None
    after: str | None = None
    newest_first: bool = False


def page_size(value: object, default: int = DEFAULT_PAGE_SIZE, maximum: int = MAX_PAGE_SIZE) -> int:
    """A page size clamped to 1..maximum; anything that is not an integer falls back to the default.

    The same forgiving rule as search's ``max_results`` (CONTRACT section 5):
    a model that asks for 10,000 gets the maximum, not an error.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            return default
    return max(1, min(maximum, value))


def encode_cursor(memory: Memory) -> str:
    """The cursor after ``memory`` (the last one shown)."""
    raw = json.dumps([memory.agent_id, memory.key], ensure_ascii=False, separators=(",", ":"))
    return CURSOR_PREFIX + base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: object) -> tuple[str, str]:
    """The (agent id, key) position a cursor names, or ValidationError (never anything else)."""
    bad = ValidationError("cursor is not valid; pass back the next_cursor of a previous page, or none")
    if not isinstance(cursor, str) or not cursor.startswith(CURSOR_PREFIX) or len(cursor) > MAX_CURSOR_CHARS:
        raise bad
    body = cursor[len(CURSOR_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8")
        position = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeError, RecursionError):
        raise bad from None
    if (
        not isinstance(position, list)
        or len(position) != 2
        or not all(isinstance(part, str) and part for part in position)
    ):
        raise bad
    return position[0], position[1]


def after_position(cursor: object, agents: tuple[str, ...]) -> tuple[int, str]:
    """The (agent rank, key) a page starts after; the agent must be one the session reads."""
    agent, key = decode_cursor(cursor)
    if agent not in agents:
        raise ValidationError("cursor does not belong to this session's view; start again without a cursor")
    return agents.index(agent), key


def paged(memories: list[Memory], limit: int | None) -> Page:
    """A page from up to ``limit + 1`` rows: the extra row only says that more exist."""
    if limit is None or len(memories) <= limit:
        return Page(memories)
    shown = memories[:limit]
    return Page(shown, encode_cursor(shown[-1]))


def encode_offset(shown: int) -> str:
    """The cursor of a ranked or asked-for answer cut after ``shown`` entries (``decode_offset`` reads it).

    Ranked answers (searches, a graph's ``open_nodes``) have no key order to resume
    from: the same call with this cursor answers the same entries from this one on.
    It holds a count of entries the session was just shown, nothing else.
    """
    return f"{OFFSET_PREFIX}{shown}"


def decode_offset(cursor: object) -> int:
    """How many entries a ranked answer's cursor skips, or ValidationError."""
    bad = ValidationError("cursor is not valid; pass back the next_cursor of a previous answer, or none")
    if not isinstance(cursor, str) or not cursor.startswith(OFFSET_PREFIX):
        raise bad
    digits = cursor[len(OFFSET_PREFIX) :]
    if not digits.isascii() or not digits.isdigit() or len(digits) > 7 or int(digits) > MAX_OFFSET:
        raise bad
    return int(digits)
