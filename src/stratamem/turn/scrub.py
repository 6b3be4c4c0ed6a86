"""Credential scrubbing and bounding for anything that leaves the process.

Events go to observers and tracing backends that are usually less protected
than the memory store itself, and tool arguments routinely carry API keys.
So every string that becomes part of an event is passed through
:func:`scrub_text` (free text) or :func:`scrub_value` (structured data) and
then bounded.  The rules err on the side of redacting too much: a false
positive costs a little debugging context, a false negative leaks a secret.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .textcut import ellipsize

__all__ = [
    "DEFAULT_MAX_CHARS",
    "REDACTED",
    "bound_text",
    "is_secret_key",
    "mask_secret",
    "scrub_text",
    "scrub_value",
]

REDACTED = "[REDACTED]"
DEFAULT_MAX_CHARS = 1024
_MASK_SUFFIX = "*" + REDACTED
_MAX_DEPTH = 8

# Key names that look like they hold a secret.  ``auth`` must not match
# ``author``; ``session`` covers session ids, keys and cookies.
_SECRET_WORD = (
    r"(?:password|passwd|pwd|secret|token(?!s\b)|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|authorization|auth(?!or)|credential|client[_-]?secret"
    r"|session|cookie)"
)
_SECRET_WORD_RE = re.compile(_SECRET_WORD, re.IGNORECASE)

# Well-known credential formats that are recognisable without a key name.
# Each pattern's group "secret" is what gets masked.  Every pattern must stay
# linear on hostile input (it runs over whole tool arguments): a pattern whose
# attempts could start inside a run it scans uses a lookbehind, not \b.
_BARE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"(?P<secret>\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,})",  # OpenAI / Anthropic
        r"(?P<secret>\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,})",  # Stripe
        r"(?P<secret>\bgh[pousr]_[A-Za-z0-9]{20,})",  # GitHub tokens
        r"(?P<secret>\bgithub_pat_[A-Za-z0-9_]{20,})",  # GitHub fine-grained
        r"(?P<secret>\bglpat-[A-Za-z0-9_-]{20,})",  # GitLab
        r"(?P<secret>\b(?:AKIA|ASIA)[0-9A-Z]{16})\b",  # AWS access key id
        r"(?P<secret>\bxox[baprs]-[A-Za-z0-9-]{10,})",  # Slack
        r"(?P<secret>https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+)",  # Slack webhook
        r"(?P<secret>\bAIza[0-9A-Za-z_-]{35})",  # Google API key
        r"(?P<secret>\bhf_[A-Za-z0-9]{30,})",  # Hugging Face
        r"(?P<secret>\bnpm_[A-Za-z0-9]{36})",  # npm
        r"(?P<secret>\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,})",  # SendGrid
        r"(?<![A-Za-z0-9_-])(?P<secret>eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)",  # JWT
        r"\b(?:Bearer|Basic|Token)\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})",  # auth schemes
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://[^\s:/@]++:(?P<secret>[^\s@/]++)@",  # URL credentials
    )
)

_PEM_RE = re.compile(
    r"(?P<begin>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)"
    r"[\s\S]*?"
    r"(?:(?P<end>-----END [A-Z0-9 ]*PRIVATE KEY-----)|\Z)"
)

# ``key=value``, ``key: value`` and ``"key": "value"`` pairs.  A value is
# either quoted (may contain spaces) or runs to the next separator; an
# optional auth scheme keeps ``Authorization: Bearer xyz`` in one value.
_PAIR_RE = re.compile(
    rf"""(?<![\w.-])                     # start only where a name starts ...
         (?P<key>\\?["']?
            (?=[\w.-]*?{_SECRET_WORD})   # ... whose name looks secret,
            [\w.-]++                     # taken whole (possessive: no backtracking)
         \\?["']?)
         (?P<sep>\s*+[:=]\s*+)
         (?:
            \\"(?P<eq>(?:[^"\\\n]|\\[^"\n])*)\\"    # \"escaped\" inside JSON text
          | "(?P<dq>(?:[^"\\\n]|\\.)*)"
          | '(?P<sq>(?:[^'\\\n]|\\.)*)'
          | (?P<bare>(?:(?:Bearer|Basic|Token|Digest)\s+)?[^\s"',;&}}\]]+)
         )""",
    re.IGNORECASE | re.VERBOSE,
)


def is_secret_key(name: str) -> bool:
    """Whether a field or parameter name looks like it holds a credential."""
    return _SECRET_WORD_RE.search(name) is not None


def mask_secret(value: str) -> str:
    """Keep a short prefix so operators can tell which credential it was.

    Values of 8 characters or fewer are redacted entirely: a 4-character
    prefix of a short password would give away half of it.
    """
    if REDACTED[:-1] in value:  # already masked (a bare value stops before "]")
        return value
    if len(value) <= 8:
        return REDACTED
    return value[:4] + _MASK_SUFFIX


def _mask_group(match: re.Match[str], group: str) -> str:
    start, end = match.span(group)
    whole_start = match.start()
    text = match.group(0)
    return text[: start - whole_start] + mask_secret(match.group(group)) + text[end - whole_start :]


def _scrub_pem(match: re.Match[str]) -> str:
    end = match.group("end") or ""
    return f"{match.group('begin')}\n{REDACTED}\n{end}".rstrip("\n")


def _scrub_pair(match: re.Match[str]) -> str:
    for group in ("eq", "dq", "sq", "bare"):
        if match.group(group) is not None:
            return _mask_group(match, group)
    return match.group(0)  # pragma: no cover - one alternative always matches


def scrub_text(text: str) -> str:
    """Redact credentials in free text (logs, errors, argument strings)."""
    text = _PEM_RE.sub(_scrub_pem, text)
    for pattern in _BARE_PATTERNS:
        text = pattern.sub(lambda m: _mask_group(m, "secret"), text)
    return _PAIR_RE.sub(_scrub_pair, text)


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
            str(k): REDACTED if is_secret_key(str(k)) else scrub_value(v, _depth=_depth + 1) for k, v in value.items()
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
