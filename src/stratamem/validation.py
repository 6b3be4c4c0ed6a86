"""Input checks that run before anything is written.

Pure functions: each returns the cleaned value or raises ``ValidationError``,
so a bad save can never leave half a record behind.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

from .errors import ValidationError

MAX_KEY_CHARS = 256
DEFAULT_MAX_CONTENT_BYTES = 64 * 1024
MAX_TAGS = 64
MAX_TAG_CHARS = 128
MAX_CATEGORY_CHARS = 64
MAX_ID_CHARS = 128
MAX_REASON_CHARS = 1000
# A century: long enough for "keep forever", short enough that now + ttl is always a valid datetime.
MAX_TTL_SECONDS = 100 * 366 * 24 * 3600
BUILTIN_CATEGORIES = ("core", "daily", "conversation")
#: the longest ``context`` a memory carries (characters, after stripping)
MAX_CONTEXT_CHARS = 2000


# Unicode category Cc is exactly C0, DEL and C1 (U+0000-U+001F, U+007F-U+009F; stable since Unicode 1.1,
# tests/test_bulk_writes.py checks it against unicodedata): one regex pass instead of a lookup per character.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _has_control(text: str) -> bool:
    return _CONTROL.search(text) is not None


def _encodable(text: str, what: str) -> None:
    """Lone surrogates (e.g. undecodable bytes from a shell) cannot be stored as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{what} is not valid UTF-8 text") from None


def check_key(key: object) -> str:
    if not isinstance(key, str):
        raise ValidationError("key must be a string")
    if not key:
        raise ValidationError("key must not be empty")
    if not key.strip():
        raise ValidationError("key must not be blank (only spaces)")
    if len(key) > MAX_KEY_CHARS:
        raise ValidationError(f"key is {len(key)} characters long; the limit is {MAX_KEY_CHARS}")
    if _has_control(key):
        raise ValidationError("key must not contain control characters")
    _encodable(key, "key")
    return key


def check_content(content: object, max_bytes: int = DEFAULT_MAX_CONTENT_BYTES) -> str:
    if not isinstance(content, str):
        raise ValidationError("content must be a string")
    if not content:
        raise ValidationError("content must not be empty")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError("content is not valid UTF-8 text") from None
    if size > max_bytes:
        raise ValidationError(f"content is {size} bytes; the limit is {max_bytes} bytes")
    return content


def check_tag(tag: object) -> str:
    """One tag, as stored or as a filter."""
    if not isinstance(tag, str):
        raise ValidationError(f"tags must be strings, got {type(tag).__name__}")
    if not tag or len(tag) > MAX_TAG_CHARS or _has_control(tag):
        raise ValidationError(f"each tag must be 1 to {MAX_TAG_CHARS} characters without control characters")
    _encodable(tag, "tag")
    return tag


def check_tags(tags: object) -> tuple[str, ...]:
    """Tags as a list (any iterable from Python) of strings.

    A mapping is refused, not read as its keys: a JSON object in ``tags`` would otherwise become
    tags on one surface and an error on another.
    """
    if tags is None:
        return ()
    if isinstance(tags, (tuple, list)):  # the usual case, without the ABC check below
        pass
    elif isinstance(tags, (str, bytes, Mapping)) or not isinstance(tags, Iterable):
        raise ValidationError("tags must be a list of strings")
    out: list[str] = []
    for tag in tags:
        if check_tag(tag) not in out:
            out.append(tag)
        if len(out) > MAX_TAGS:  # inside the loop: a huge iterable is refused without reading it all
            raise ValidationError(f"at most {MAX_TAGS} tags per memory")
    return tuple(out)


def check_category(category: object) -> str:
    if not isinstance(category, str) or not category.strip():
        raise ValidationError("category must be a non-empty string")
    if len(category) > MAX_CATEGORY_CHARS or _has_control(category):
        raise ValidationError(
            f"category must be at most {MAX_CATEGORY_CHARS} characters without control characters"
        )
    _encodable(category, "category")
    return category


def check_ttl(ttl: object) -> float | None:
    """Seconds or a timedelta; must be a positive, finite duration."""
    if ttl is None:
        return None
    if isinstance(ttl, timedelta):
        seconds = ttl.total_seconds()
    elif isinstance(ttl, (int, float)) and not isinstance(ttl, bool):
        if isinstance(ttl, int) and ttl > MAX_TTL_SECONDS:  # float() of a huge int would overflow
            ttl = math.inf
        seconds = float(ttl)
    else:
        raise ValidationError("ttl must be a number of seconds or a timedelta")
    if math.isnan(seconds) or seconds <= 0:
        raise ValidationError("ttl must be a positive, finite duration")
    if seconds > MAX_TTL_SECONDS:
        raise ValidationError(f"ttl is longer than the limit of {MAX_TTL_SECONDS} seconds (100 years)")
    return seconds


def check_id(value: object, what: str) -> str:
    """An identifier (agent, session, lineage): 1 to 128 visible characters, valid UTF-8."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_CHARS or _has_control(value):
        raise ValidationError(
            f"{what} must be 1 to {MAX_ID_CHARS} characters, not blank, without control characters"
        )
    _encodable(value, what)
    return value


def check_agent_id(agent_id: object) -> str:
    return check_id(agent_id, "agent id")


def check_peers(peers: object) -> tuple[str, ...] | None:
    """A list of agent ids (a bare string is refused: it is not a list of one); ``None`` stays ``None``."""
    if peers is None:
        return None
    if isinstance(peers, (str, bytes)) or not isinstance(peers, Iterable):
        raise ValidationError("peers must be a list of agent ids")
    return tuple(dict.fromkeys(check_agent_id(p) for p in peers))


def check_text(value: object, what: str, max_chars: int = MAX_REASON_CHARS) -> str:
    """Free text kept in records (an escalation's reason or source): a bounded, valid UTF-8 string."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string")
    if len(value) > max_chars:
        raise ValidationError(f"{what} is {len(value)} characters long; the limit is {max_chars}")
    _encodable(value, what)
    return value


def parse_time(value: object, what: str, *, naive_is_utc: bool = True) -> datetime:
    """An ISO 8601 time as an aware UTC datetime, or ValidationError.

    Offsets can push a valid local time outside the representable range
    (``0001-01-01T00:00+14:00``); that is a bad value, not a crash.
    """
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be an ISO 8601 time string")
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(f"{what} must be an ISO 8601 time such as 2025-03-01T00:00:00Z") from None
    if moment.tzinfo is None:
        if not naive_is_utc:
            raise ValidationError(f"{what} must carry a timezone")
        moment = moment.replace(tzinfo=UTC)
    return check_time(moment, what)


def check_time(moment: object, what: str) -> datetime:
    """A timezone-aware datetime that converts to UTC and to epoch microseconds."""
    if not isinstance(moment, datetime) or moment.tzinfo is None or moment.utcoffset() is None:
        raise ValidationError(f"{what} must be a timezone-aware datetime")
    try:
        utc = moment.astimezone(UTC)
        utc.timestamp()
    except (OverflowError, ValueError, OSError):
        raise ValidationError(f"{what} is outside the representable range of times") from None
    return utc


def check_occurred_at(value: object, what: str = "occurred_at") -> datetime | None:
    """When a memory's event happened: an aware datetime or an ISO 8601 string, as aware UTC; None stays None.

    Any year from 1 to 9999 is accepted (memories of history and of future plans are legitimate) as
    long as the time converts to UTC and to the stores' epoch microseconds. Naive values follow the
    module's convention for times given by callers (``parse_time(naive_is_utc=True)``, as the listing
    filters and the tools' ``since``/``until`` read them): a string without an offset is UTC. A naive
    ``datetime`` object is refused: Python code that forgot a timezone gets an error, not a guess.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return parse_time(value, what)
    if not isinstance(value, datetime):
        raise ValidationError(f"{what} must be an ISO 8601 time string or a timezone-aware datetime")
    return check_time(value, what)


def check_context(value: object) -> str | None:
    """A memory's ``context``: text that situates it, stripped, at most ``MAX_CONTEXT_CHARS``; empty -> None.

    It is content (stored at the memory's level, scanned by the gate), so it takes content's checks —
    valid UTF-8, no NUL — and, being one short line of situation, no control characters but tab and
    newline.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError("context must be a string")
    _encodable(value, "context")
    text = value.strip()
    if not text:
        return None
    if len(text) > MAX_CONTEXT_CHARS:
        raise ValidationError(f"context is {len(text)} characters long; the limit is {MAX_CONTEXT_CHARS}")
    if _CONTROL.search(text.replace("\n", " ").replace("\t", " ").replace("\r", " ")):
        raise ValidationError("context must not contain control characters (other than tab and newline)")
    return text


def cut_context(text: str | None) -> str | None:
    """Text made into a valid context for a save the system makes (autosave): control characters but
    tab and newline dropped, cut to the limit; nothing left -> None."""
    if text is None:
        return None
    cleaned = _CONTROL.sub(lambda m: m.group() if m.group() in "\t\n\r" else "", text)
    cleaned = cleaned.encode("utf-8", "replace").decode("utf-8").strip()[:MAX_CONTEXT_CHARS].strip()
    return cleaned or None


#: the most hits one search returns
MAX_RESULTS = 100


def clamp_max_results(value: object, default: int = 10) -> int:
    """1..MAX_RESULTS for the tools' lenient callers; anything that is not an integer falls back to the default."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            return default
    return max(1, min(MAX_RESULTS, value))
