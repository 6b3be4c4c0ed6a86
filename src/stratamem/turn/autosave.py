"""Which user messages become ``conversation`` memories on their own.

Autosave is the one place where a turn writes memory without being asked,
so its defaults are conservative: only turns typed by a person, only
messages long enough to carry information, never the plumbing's own echoes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

from .context import Origin
from .errors import ValidationError
from .noise import AUTOSAVE_KEY_PREFIXES, is_noise_content
from .observe import EventBus, MemoryStore, emit

__all__ = ["AutosavePolicy", "autosave_key", "autosave_user_message", "should_autosave"]

CONVERSATION = "conversation"


class SavingSession(Protocol):
    def save(self, key: str, content: str, category: str = ...) -> object: ...


@dataclass(frozen=True, slots=True)
class AutosavePolicy:
    """Autosave settings.  Scheduled and agent-to-agent turns are off by default:
    their "user" text is a prompt template, not something a person said."""

    enabled: bool = True
    origins: frozenset[str] = frozenset({Origin.INTERACTIVE.value, Origin.CHANNEL.value})
    min_chars: int = 20

    def __post_init__(self) -> None:
        if self.min_chars < 0:
            raise ValidationError("AutosavePolicy.min_chars must be >= 0")
        unknown = set(self.origins) - {o.value for o in Origin}
        if unknown:
            raise ValidationError(f"AutosavePolicy.origins has unknown origins: {sorted(unknown)}")


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
    policy: AutosavePolicy = AutosavePolicy(),
    *,
    events: EventBus | None = None,
) -> str | None:
    """Save ``message`` if the policy says so; return the key saved under.

    A refused or failed save (for instance the session's level forbids the
    write) is reported as an event, not raised: autosave must not break the
    turn that triggered it.
    """
    if not should_autosave(message, origin, policy):
        return None
    key = autosave_key(message)
    try:
        session.save(key, message.strip(), category=CONVERSATION)
    except Exception as exc:
        emit(events, MemoryStore(key=key, category=CONVERSATION, success=False, error=f"{type(exc).__name__}: {exc}"))
        return None
    emit(events, MemoryStore(key=key, category=CONVERSATION, success=True))
    return key
