"""The session transcript: continuity for the model, kept in the store, not memory.

A transcript belongs to one stratamem session (its id is the session id), so
``session.reset()`` starts a new, empty one; the old one stays, readable only
by sessions of the same agent whose taint covers its messages. Every message
is stored through the storage protocol, labelled by the store with the
session's live taint, inside the audit chain (events carry counts and roles,
never content). Transcript rows have no search index: nothing said in passing
becomes recallable knowledge unless a memory write happens.

This module is a thin view over ``session.store.backend``: it converts
:class:`Message` to rows and back and enforces the size bounds. Trimming
never deletes from the store: :meth:`Transcript.page` fetches any range back
by position.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..storage import turn_store
from ..storage.sql.transcripts import MessageDraft, TailMark, TranscriptMessage, TranscriptPage
from .errors import LimitExceededError, ValidationError
from .messages import Message
from .tail_cache import TailCache, to_message

if TYPE_CHECKING:
    from ..session import Session

__all__ = ["MAX_MESSAGE_CHARS", "MAX_PAGE", "MAX_TOOL_CALLS", "StoredMessage", "Transcript", "to_message"]

MAX_MESSAGE_CHARS = 1_000_000  # one message's text (a tool result is bounded far below this first)
MAX_TOOL_CALLS = 64  # tool calls one assistant message may ask for
MAX_CALL_ARGUMENT_CHARS = 64 * 1024
MAX_PAGE = 1000  # messages one read returns


def _storable(text: str) -> str:
    """Join surrogate pairs and replace lone surrogates, so every backend stores the text."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message as the reader may see it: its position, the level it was written at."""

    position: int
    message: Message
    level: str
    origin: str | None = None
    created_at: datetime | None = None  # not shown (to_dict): a turn's start, for what its recall leaves out

    @classmethod
    def of(cls, row: TranscriptMessage) -> StoredMessage:
        return cls(row.position, to_message(row), row.level.name, row.origin, row.created_at)

    def to_dict(self) -> dict[str, Any]:
        return {"position": self.position, "level": self.level, **self.message.to_dict()}


def draft_of(message: Message, origin: str | None = None) -> MessageDraft:
    """Validate the bounds of one message and convert it to a storage draft."""
    if not isinstance(message.content, str):
        raise ValidationError("message content must be a string")
    if len(message.content) > MAX_MESSAGE_CHARS:
        raise LimitExceededError(f"a message may hold at most {MAX_MESSAGE_CHARS} characters")
    if len(message.tool_calls) > MAX_TOOL_CALLS:
        raise LimitExceededError(f"an assistant message may ask for at most {MAX_TOOL_CALLS} tool calls")
    ids = [c.id for c in message.tool_calls]
    if len(set(ids)) != len(ids):
        raise ValidationError("tool call ids must be unique within a message")
    calls = []
    for call in message.tool_calls:
        if len(call.arguments) > MAX_CALL_ARGUMENT_CHARS or len(call.id) > 256 or len(call.name) > 256:
            raise LimitExceededError(f"tool call {call.id[:64]!r} is too large")
        calls.append({k: _storable(v) for k, v in call.to_dict().items()})
    call_id = _storable(message.tool_call_id) if message.tool_call_id is not None else None
    if call_id is not None and len(call_id) > 256:
        raise ValidationError("tool_call_id is too long")
    return MessageDraft(
        message.role, _storable(message.content), json.dumps(calls, ensure_ascii=False), call_id, origin
    )


class Transcript:
    """One session's view of transcripts in its store."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._backend = session.store.backend
        self._cache: TailCache | None = getattr(session.store, "turn_tails", None)

    def append(self, *messages: Message, origin: str | None = None) -> list[TranscriptMessage]:
        """Add messages at the end of the session's own transcript, in one transaction."""
        drafts = [draft_of(m, origin if i == 0 else None) for i, m in enumerate(messages)]
        return turn_store.append_messages(self._backend, self.session.id, drafts, self.session.store.now())

    def page(
        self, start: int = 0, limit: int = 100, transcript_id: str | None = None, *, named: bool = True
    ) -> tuple[list[StoredMessage], int]:
        """Positions ``start .. start+limit`` of a transcript as this session may see it, and the total.

        ``transcript_id`` (another session's id, e.g. the one before a reset)
        reads that transcript: only the own agent's messages at levels <= the
        live taint; an unknown id and one with nothing visible look the same.
        ``named=False``: the caller may not name that transcript (a server's
        principal does not own its session); it reads exactly as an unknown
        id, after the same checks.
        """
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise ValidationError("start must be an integer >= 0")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError("limit must be an integer >= 1")
        target = self.session.id if transcript_id is None else transcript_id
        if not isinstance(target, str) or not 0 < len(target) <= 256:
            raise ValidationError("transcript_id must be a session id")
        result = turn_store.read_messages(
            self._backend,
            self.session.id,
            target if named else None,
            start,
            min(limit, MAX_PAGE),
            self.session.store.now(),
        )
        return [StoredMessage.of(m) for m in result.messages], result.total

    def messages(self, start: int = 0, end: int | None = None) -> list[StoredMessage]:
        """The own transcript's positions ``start <= p < end`` (bounded by ``MAX_PAGE``)."""
        if end is not None and (not isinstance(end, int) or end < start):
            raise ValidationError(f"invalid range [{start}, {end})")
        limit = MAX_PAGE if end is None else max(1, min(MAX_PAGE, end - start))
        if end is not None and end == start:
            return []
        return self.page(start, limit)[0]

    def tail(self, window: int) -> tuple[int, list[Message]]:
        """The last ``window`` messages, starting at a user message when one is in reach, and their offset.

        What lies before the offset counts as omitted, so a transcript of any
        length costs one bounded read per prompt (only the messages added
        since the last prompt are fetched: ``tail_cache``).
        """
        self._check_window(window)
        sent = self._cache.mark(self.session.id, window) if self._cache is not None else None
        while True:
            page = turn_store.read_messages(
                self._backend,
                self.session.id,
                self.session.id,
                None,
                window,
                self.session.store.now(),
                since=sent,
            )
            merged = self._merge(window, sent, page)
            if merged is not None:
                return merged
            sent = None  # another thread changed the window held meanwhile: read it whole (never a delta)

    def append_then_tail(
        self, message: Message, window: int, origin: str | None = None
    ) -> tuple[TranscriptMessage, int, list[Message]]:
        """Append one message and read the tail (as :meth:`tail`) in the same transaction."""
        self._check_window(window)
        draft = draft_of(message, origin)
        sent = self._cache.mark(self.session.id, window) if self._cache is not None else None
        (stored,), page = turn_store.append_and_tail(
            self._backend, self.session.id, [draft], self.session.store.now(), window, sent
        )
        merged = self._merge(window, sent, page)
        return stored, *(merged if merged is not None else self.tail(window))

    @staticmethod
    def _check_window(window: int) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or not 0 < window <= MAX_PAGE:
            raise ValidationError(f"window must be an integer in 1..{MAX_PAGE}")

    def _merge(
        self, window: int, sent: TailMark | None, page: TranscriptPage
    ) -> tuple[int, list[Message]] | None:
        if self._cache is not None:
            held = self._cache.merge(self.session.id, window, sent, page)
            if held is None:
                return None
            rows, messages = held
        elif page.delta:
            return None
        else:
            rows, messages = page.messages, tuple(to_message(r) for r in page.messages)
        offset = rows[0].position if rows else 0
        first_user = 0
        if offset > 0:
            first_user = next((i for i, r in enumerate(rows) if r.role == "user"), 0)
            offset += first_user
        return offset, list(messages[first_user:])
