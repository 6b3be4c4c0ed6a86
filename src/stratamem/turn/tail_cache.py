"""The newest messages of each session's own transcript, kept between prompts.

Every prompt needs the transcript's tail (up to ``history_window`` messages).
Reading and decoding 200 rows per prompt was the largest part of a turn, yet
between two prompts of a session usually only that session's own few
messages were added. So a store keeps, per session, the window it last read
and a :class:`~stratamem.storage.sql.transcripts.TailMark` (visible count, newest
row id); each read still goes to the store, inside the lattice and the audit
chain, but asks only for what follows the mark. The backend answers with the
delta when the mark still holds, or the whole window when it does not (a
purge, a taint that now reveals more, another process's appends beyond the
window), so a stale cache can cost a re-read but never serve a wrong tail.

Only a session's own transcript, read with its own live taint, is cached,
under that session's id: nothing another session could not read itself.
Bounded by sessions and by characters held.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..storage.sql.transcripts import TailMark, TranscriptMessage, TranscriptPage
from .messages import Message, ToolCallRequest

__all__ = ["TailCache", "to_message"]

MAX_SESSIONS = 256
MAX_CHARS = 32 * 1024 * 1024  # all sessions together; a larger window is simply not kept


def to_message(row: TranscriptMessage) -> Message:
    """A stored transcript row as the message it was."""
    calls = (
        ()
        if row.tool_calls == "[]"
        else tuple(ToolCallRequest.from_dict(c) for c in json.loads(row.tool_calls))
    )
    return Message(role=row.role, content=row.content, tool_calls=calls, tool_call_id=row.tool_call_id)


@dataclass(frozen=True, slots=True)
class _Entry:
    window: int
    mark: TailMark
    rows: tuple[TranscriptMessage, ...]
    messages: tuple[Message, ...]
    chars: int


def _chars(rows: tuple[TranscriptMessage, ...]) -> int:
    return sum(len(r.content) + len(r.tool_calls) for r in rows)


class TailCache:
    """session id -> the last window read, LRU, thread-safe."""

    def __init__(self, max_sessions: int = MAX_SESSIONS, max_chars: int = MAX_CHARS) -> None:
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._chars = 0
        self.max_sessions = max_sessions
        self.max_chars = max_chars

    def mark(self, session_id: str, window: int) -> TailMark | None:
        """What to ask the store for: the mark of a held window at least this wide, else None."""
        with self._lock:
            entry = self._entries.get(session_id)
        return entry.mark if entry is not None and entry.window >= window else None

    def merge(
        self, session_id: str, window: int, sent: TailMark | None, page: TranscriptPage
    ) -> tuple[tuple[TranscriptMessage, ...], tuple[Message, ...]] | None:
        """The window after ``page`` (a delta on the held one, or whole), remembered for next time.

        None when ``page`` is a delta on a window no longer held as it was
        when ``sent`` was asked for (another thread replaced or evicted it):
        read again without a mark.
        """
        with self._lock:
            entry = self._entries.get(session_id)
        if page.delta:
            if entry is None or entry.mark != sent or entry.window < window:
                return None
            fresh = tuple(to_message(r) for r in page.messages)
            joined = entry.rows + page.messages
            cut = max(0, len(joined) - window)
            rows, messages = joined[cut:], (entry.messages + fresh)[cut:]
            chars = entry.chars + _chars(page.messages) - _chars(joined[:cut])
        else:
            rows = page.messages[-window:]
            messages = tuple(to_message(r) for r in rows)
            chars = _chars(rows)
        with self._lock:
            old = self._entries.pop(session_id, None)
            if old is not None:
                self._chars -= old.chars
            if chars <= self.max_chars // 4:
                self._entries[session_id] = _Entry(
                    window, TailMark(page.total, page.last_id), rows, messages, chars
                )
                self._chars += chars
                while len(self._entries) > self.max_sessions or self._chars > self.max_chars:
                    _, dropped = self._entries.popitem(last=False)
                    self._chars -= dropped.chars
        return rows, messages

    def forget(self, session_id: str) -> None:
        with self._lock:
            old = self._entries.pop(session_id, None)
            if old is not None:
                self._chars -= old.chars
