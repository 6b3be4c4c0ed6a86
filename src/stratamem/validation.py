"""Input checks that run before anything is written.

Pure functions: each returns the cleaned value or raises ``ValidationError``,
so a bad save can never leave half a record behind.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable
from datetime import timedelta

from .errors import ValidationError

MAX_KEY_CHARS = 256
DEFAULT_MAX_CONTENT_BYTES = 64 * 1024
MAX_TAGS = 64
MAX_TAG_CHARS = 128
MAX_CATEGORY_CHARS = 64
BUILTIN_CATEGORIES = ("core", "daily", "conversation")


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


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
    _encodable(content, "content")
    size = len(content.encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(f"content is {size} bytes; the limit is {max_bytes} bytes")
    return content


def check_tags(tags: object) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise ValidationError("tags must be a list of strings")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise ValidationError(f"tags must be strings, got {type(tag).__name__}")
        if not tag or len(tag) > MAX_TAG_CHARS or _has_control(tag):
            raise ValidationError(
                f"each tag must be 1 to {MAX_TAG_CHARS} characters without control characters"
            )
        _encodable(tag, "tag")
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
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
        seconds = float(ttl)
    else:
        raise ValidationError("ttl must be a number of seconds or a timedelta")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValidationError("ttl must be a positive, finite duration")
    return seconds


def check_agent_id(agent_id: object) -> str:
    if not isinstance(agent_id, str) or not agent_id or len(agent_id) > 128 or _has_control(agent_id):
        raise ValidationError("agent id must be 1 to 128 characters without control characters")
    _encodable(agent_id, "agent id")
    return agent_id


def clamp_max_results(value: object, default: int = 10) -> int:
    """1..100; anything that is not an integer falls back to the default."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            return default
    return max(1, min(100, value))
