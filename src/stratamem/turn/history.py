"""The session transcript: continuity for the model, not memory.

History lets the next turn see what was just said.  It is deliberately kept
apart from the memory store (own tables, no search method) so that nothing
said in passing becomes recallable knowledge unless a memory write happens.
Each message records the session's taint when it was added, so a transcript
can later be shown only to readers cleared for what it contains.

Trimming never deletes from here: :meth:`HistoryStore.messages` fetches any
range back by position.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType

from ..private import private_sqlite_file
from .errors import ValidationError
from .messages import Message, ToolCallRequest

__all__ = ["HistoryStore", "StoredMessage", "taint_label"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS history_messages (
    session_id   TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    role         TEXT    NOT NULL,
    content      TEXT    NOT NULL,
    tool_calls   TEXT    NOT NULL DEFAULT '[]',
    tool_call_id TEXT,
    taint        TEXT,
    created_at   TEXT    NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
"""

_INSERT = """
INSERT INTO history_messages (session_id, seq, role, content, tool_calls, tool_call_id, taint, created_at)
SELECT ?, COALESCE(MAX(seq) + 1, 0), ?, ?, ?, ?, ?, ?
FROM history_messages WHERE session_id = ?
RETURNING seq
"""

_COLUMNS = "session_id, seq, role, content, tool_calls, tool_call_id, taint, created_at"


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message as kept in the transcript, with its position and taint label."""

    session_id: str
    seq: int
    message: Message
    taint: str | None
    created_at: datetime


def taint_label(taint: object | None) -> str | None:
    """Levels are stored by name so the label survives enum renumbering."""
    if taint is None:
        return None
    name = getattr(taint, "name", None)
    return name if isinstance(name, str) else str(taint)


def _storable(text: str) -> str:
    """SQLite stores UTF-8: join surrogate pairs, replace lone surrogates."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _utc_now() -> datetime:
    return datetime.now(UTC)


class HistoryStore:
    """Per-session transcripts in SQLite (tables prefixed ``history_``).

    Pass a path to let the store own its connection, or an open
    :class:`sqlite3.Connection` to share a database with other components;
    a shared connection is not closed by :meth:`close`.
    """

    def __init__(
        self,
        db: str | os.PathLike[str] | sqlite3.Connection,
        *,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._owns_connection = not isinstance(db, sqlite3.Connection)
        if not isinstance(db, sqlite3.Connection):
            private_sqlite_file(db)  # transcripts hold content of every level: owner-only, like the store
        self._conn = sqlite3.connect(db) if not isinstance(db, sqlite3.Connection) else db
        self._clock = clock
        with self._conn:
            self._conn.executescript(_SCHEMA)

    def append(self, session_id: str, message: Message, *, taint: object | None = None) -> StoredMessage:
        """Add ``message`` at the end of the session's transcript."""
        if not session_id:
            raise ValidationError("session_id must be a non-empty string")
        created_at = self._clock()
        calls = json.dumps([_storable_call(c) for c in message.tool_calls], ensure_ascii=False)
        label = taint_label(taint)
        with self._conn:
            (seq,) = self._conn.execute(
                _INSERT,
                (
                    session_id,
                    message.role,
                    _storable(message.content),
                    calls,
                    message.tool_call_id,
                    label,
                    created_at.isoformat(),
                    session_id,
                ),
            ).fetchone()
        return StoredMessage(session_id, seq, message, label, created_at)

    def messages(self, session_id: str, start: int = 0, end: int | None = None) -> list[StoredMessage]:
        """Messages at positions ``start <= seq < end`` (``end=None``: to the last)."""
        if start < 0 or (end is not None and end < start):
            raise ValidationError(f"invalid range [{start}, {end})")
        upper = end if end is not None else 2**63 - 1
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM history_messages WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq",
            (session_id, start, upper),
        ).fetchall()
        return [_row_to_stored(row) for row in rows]

    def transcript(self, session_id: str) -> list[Message]:
        """The whole transcript as plain messages, oldest first."""
        return [stored.message for stored in self.messages(session_id)]

    def count(self, session_id: str) -> int:
        (n,) = self._conn.execute(
            "SELECT COUNT(*) FROM history_messages WHERE session_id = ?", (session_id,)
        ).fetchone()
        return int(n)

    def session_ids(self) -> list[str]:
        rows = self._conn.execute("SELECT DISTINCT session_id FROM history_messages ORDER BY session_id").fetchall()
        return [row[0] for row in rows]

    def delete_session(self, session_id: str) -> int:
        """Forget a session's transcript; returns how many messages went."""
        with self._conn:
            cursor = self._conn.execute("DELETE FROM history_messages WHERE session_id = ?", (session_id,))
        return cursor.rowcount

    def close(self) -> None:
        if self._owns_connection:
            self._conn.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _storable_call(call: ToolCallRequest) -> dict[str, str]:
    return {key: _storable(value) for key, value in call.to_dict().items()}


def _row_to_stored(row: tuple[str, int, str, str, str, str | None, str | None, str]) -> StoredMessage:
    session_id, seq, role, content, calls, tool_call_id, taint, created_at = row
    message = Message(
        role=role,
        content=content,
        tool_calls=tuple(ToolCallRequest.from_dict(c) for c in json.loads(calls)),
        tool_call_id=tool_call_id,
    )
    return StoredMessage(session_id, seq, message, taint, datetime.fromisoformat(created_at))
