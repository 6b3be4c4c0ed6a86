"""Credential scrubbing and bounding for anything that leaves the process.

Events go to observers and tracing backends that are usually less protected
than the memory store itself, and tool arguments routinely carry API keys.
So every string that becomes part of an event is passed through
:func:`scrub_text` (free text) or :func:`scrub_value` (structured data) and
then bounded.  Detection and masking are the store's one credential
scrubber (``stratamem.policy.redact.redact_secrets``), shared with error
messages; this module adds the walk over structured data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..policy.credentials import is_secret_name
from ..policy.redact import REDACTED, mask_secret, redact_secrets
from .textcut import ellipsize

__all__ = [
    "DEFAULT_MAX_CHARS",
    "QUERY_SUMMARY_CHARS",
    "REDACTED",
    "bound_text",
    "is_secret_key",
    "mask_secret",
    "scrub_text",
    "scrub_value",
    "scrub_within",
    "summarize_query",
]

DEFAULT_MAX_CHARS = 1024
_MAX_DEPTH = 8


def is_secret_key(name: str) -> bool:
    """Whether a field or parameter name looks like it holds a credential."""
    return is_secret_name(name)


def scrub_text(text: str) -> str:
    """Redact credentials in free text (logs, errors, argument strings): the one scrubber, ``redact_secrets``.

    Nothing is remembered between calls: a process-wide memo of scrubbed texts would let one session time
    whether another had just sent the same short text (a key, a query, a short content).
    """
    return redact_secrets(text)


def scrub_value(value: Any, *, _depth: int = 0) -> Any:
    """Redact credentials in JSON-like data.

    Fields whose *name* looks secret are replaced whole: the structure tells
    us exactly where the secret is, so there is no reason to keep a prefix.
    Strings that parse as JSON objects or arrays are scrubbed structurally
    and re-serialised, since tool arguments often arrive as JSON text.
    """
    if _depth > _MAX_DEPTH:
        return REDACTED
    if isinstance(value, Mapping):
        return {
            str(k): REDACTED if is_secret_key(str(k)) else scrub_value(v, _depth=_depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub_value(v, _depth=_depth + 1) for v in value]
    if isinstance(value, str):
        parsed = _parse_json_container(value)
        if parsed is not None:
            return json.dumps(scrub_value(parsed, _depth=_depth + 1), ensure_ascii=False)
        return scrub_text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    return scrub_text(repr(value))


def scrub_within(value: Any, max_chars: int) -> Any:
    """``scrub_value`` of the part of ``value`` that can show in its first ``max_chars`` characters of JSON.

    An event field is cut to ``max_chars`` after scrubbing, so scrubbing what the cut drops is wasted
    work (a 100-entity tool call would otherwise scrub hundreds of strings to keep one kilobyte). Items
    are taken in order until the keys and scrubbed strings kept add up to ``max_chars``; every string
    kept is scrubbed whole, so the cut text is exactly that of ``scrub_value`` on everything.
    """
    if max_chars <= 0 or not isinstance(value, Mapping | list | tuple):
        return scrub_value(value)
    budget = [max_chars]

    def walk(item: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            return REDACTED
        if isinstance(item, Mapping):
            out: dict[str, Any] = {}
            for k, v in item.items():
                if budget[0] <= 0:
                    break
                key = str(k)
                budget[0] -= len(key)
                out[key] = REDACTED if is_secret_key(key) else walk(v, depth + 1)
            return out
        if isinstance(item, list | tuple):
            kept: list[Any] = []
            for v in item:
                if budget[0] <= 0:
                    break
                kept.append(walk(v, depth + 1))
            return kept
        scrubbed = scrub_value(item, _depth=depth)
        budget[0] -= len(scrubbed) if isinstance(scrubbed, str) else 0
        return scrubbed

    return walk(value, 0)


def _parse_json_container(text: str) -> dict[str, Any] | list[Any] | None:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict | list) else None


def bound_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Cut ``text`` to at most ``max_chars`` characters (0 or less: no bound)."""
    return text if max_chars <= 0 else ellipsize(text, max_chars)


QUERY_SUMMARY_CHARS = 80


def summarize_query(query: str) -> str:
    """The query as an event may carry it: credentials scrubbed, whitespace folded, short."""
    return bound_text(" ".join(scrub_text(query[: 4 * QUERY_SUMMARY_CHARS]).split()), QUERY_SUMMARY_CHARS)
