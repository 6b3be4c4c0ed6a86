"""Which user messages become ``conversation`` memories on their own.

Autosave is the one place where a turn writes memory without being asked,
so its defaults are conservative: only turns typed by a person, only
messages long enough to carry information, never the plumbing's own echoes.
And it writes through the same policy gate as the memory tools
(``stratamem.policy.gate``): read-only sessions, the poisoning scanner and
the operator's rules apply, so a message carrying a password or an
exfiltration command is refused (or quarantined), not remembered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol, cast

from .. import errors as core
from ..levels import Level
from ..policy.engine import DEFAULT_POLICY, Policy
from ..policy.gate import MemoryWrite, judge, refusal
from ..validation import check_category, cut_context
from .errors import ValidationError
from .messages import Message
from .noise import AUTOSAVE_KEY_PREFIXES, is_noise_content
from .observe import EventBus, MemoryStore, emit, error_summary
from .origins import AUTOSAVED_BY_DEFAULT, Origin

if TYPE_CHECKING:
    from ..session import Session

__all__ = [
    "AutosavePolicy",
    "Situation",
    "autosave_key",
    "autosave_user_message",
    "previous_text",
    "should_autosave",
]

CONVERSATION = "conversation"


@dataclass(frozen=True, slots=True)
class Situation:
    """The text that situates an autosaved message (the previous message of its transcript) and the
    highest level that text may have been written at.

    A context is content and is stored at the level of the memory it situates, so it is used only
    when ``level`` is at or below that level: ``text_at`` is given the session's taint read before
    the save, and the save writes at the live taint read inside its transaction, which is never lower
    (taint only rises). Anything above is dropped, never written down.
    """

    text: str
    level: Level

    def text_at(self, level: Level) -> str | None:
        """The context cut to the limit (control characters dropped) when it may be stored at ``level``."""
        return cut_context(self.text) if self.level <= level else None


def previous_text(messages: Sequence[Message]) -> str | None:
    """The text of the last user or assistant message with content in ``messages`` (None: there is none)."""
    for message in reversed(messages):
        if message.role in ("user", "assistant") and message.content.strip():
            return message.content
    return None


class SavingSession(Protocol):
    def save(self, key: str, content: str, *, category: str = ...) -> object: ...


@dataclass(frozen=True, slots=True)
class AutosavePolicy:
    """Autosave settings: on by default, so ``session.turn(message)`` keeps the message as a memory.

    Scheduled and agent-to-agent turns are off by default: their "user" text
    is a prompt template, not something a person said. ``category`` is
    ``conversation`` by default, which keeps the saved message to the session
    that said it (``stratamem.scope``); any other category makes it readable
    by every session of the agent and its peers, scheduled jobs included.
    How long it is kept is the store's ``Retention.autosave_ttl_days``.
    """

    enabled: bool = True
    origins: frozenset[str] = AUTOSAVED_BY_DEFAULT
    min_chars: int = 20
    category: str = CONVERSATION

    def __post_init__(self) -> None:
        if self.min_chars < 0:
            raise ValidationError("AutosavePolicy.min_chars must be >= 0")
        unknown = set(self.origins) - {o.value for o in Origin}
        if unknown:
            raise ValidationError(f"AutosavePolicy.origins has unknown origins: {sorted(unknown)}")
        try:
            check_category(self.category)
        except core.ValidationError as exc:  # the store's own check, named as this setting
            raise ValidationError(f"AutosavePolicy.{exc.message}") from None


def should_autosave(message: str, origin: Origin | str, policy: AutosavePolicy = AutosavePolicy()) -> bool:
    """Whether ``message`` from a turn of ``origin`` is worth remembering."""
    text = message.strip()
    return (
        policy.enabled
        and str(origin) in policy.origins
        and len(text) >= policy.min_chars
        and not is_noise_content(text)
    )


def autosave_key(message: str) -> str:
    """A content-derived key, so saving the same message twice updates one entry."""
    digest = hashlib.sha256(message.strip().encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{AUTOSAVE_KEY_PREFIXES[0]}{digest}"


def autosave_user_message(
    session: SavingSession,
    message: str,
    origin: Origin | str,
    settings: AutosavePolicy = AutosavePolicy(),
    *,
    events: EventBus | None = None,
    policy: Policy | AutosavePolicy | None = None,
    ttl: timedelta | None = None,
    occurred_at: datetime | None = None,
    context: Situation | None = None,
) -> str | None:
    """Save ``message`` if the settings say so and the policy gate allows it; return the key saved under.

    ``occurred_at``: when the message was said (the memory's ``occurred_at``); ``context``: the previous
    message of the transcript with an upper bound of its level, kept as the memory's context only when
    that level is at or below the level the memory is written at (see :class:`Situation`).

    ``policy`` is the operator's :class:`~stratamem.policy.Policy` (default:
    the default policy). An :class:`AutosavePolicy` passed as ``policy=`` is
    taken as ``settings``, as older callers did. A refused or failed save (the
    gate blocked it, or the session's level forbids the write) is reported as
    an event, not raised: autosave must not break the turn that triggered it.
    """
    if isinstance(policy, AutosavePolicy):
        settings, policy = policy, None
    if not should_autosave(message, origin, settings):
        return None
    key, category = autosave_key(message), settings.category
    try:
        _write(
            session,
            key,
            message.strip(),
            str(origin),
            policy or DEFAULT_POLICY,
            ttl,
            category,
            occurred_at=occurred_at,
            context=context,
        )
    except Exception as exc:  # noqa: BLE001 - any failure becomes an event; autosave never breaks the turn
        emit(
            events,
            MemoryStore(key=key, category=category, success=False, error=error_summary(exc)),
        )
        return None
    emit(events, MemoryStore(key=key, category=category, success=True))
    return key


def _write(
    session: SavingSession,
    key: str,
    content: str,
    origin: str,
    policy: Policy,
    ttl: timedelta | None = None,
    category: str = CONVERSATION,
    *,
    occurred_at: datetime | None = None,
    context: Situation | None = None,
) -> None:
    """One gated write. A store session gets the whole gate (audited); any other session
    object (a runtime's own store) still gets read-only, the scanner and the rules.
    ``ttl`` is the store's autosave retention: the copy expires and purge then removes it.
    The context is judged with the message (a refused context refuses the save); a foreign
    session's ``save`` takes neither time nor context."""
    if hasattr(session, "record") and hasattr(session, "store"):
        from ..policy.gate import gated_save

        store_session = cast("Session", session)  # a store session: it has the record and store checked above
        gated_save(
            store_session,
            key,
            content,
            category=category,
            ttl=ttl,
            policy=policy,
            path="autosave",
            origin=origin,
            occurred_at=occurred_at,
            context=None if context is None else context.text_at(store_session.taint),
        )
        return
    write = MemoryWrite(key, content, (), category)
    facts = {
        "tool": "memory_save",
        "write_path": "autosave",
        "origin": origin,
        "is_write": True,
        "arguments": write.arguments(),
        "content": content,
        "read_only": policy.read_only,
    }
    verdict = judge(policy, facts, write, name="autosave write")
    if verdict.blocked or verdict.quarantine:  # a foreign session cannot carry the quarantine tag
        raise refusal("autosave write", verdict.decision)
    session.save(key, verdict.applied(write).content, category=category)
