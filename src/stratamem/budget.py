"""One character budget for every answer an agent receives.

A memory tool's answer lands in a model's context window: a listing of 200
memories of 64 KiB, or a graph page of entities with a thousand observations
each, would evict everything else (and cost megabytes per call over MCP and
REST). So every answer of ``tools.execute`` — and therefore of MCP stdio, MCP
HTTP, REST and the turn path, which all run it — is cut to
``Store.max_answer_chars`` characters. The default matches the turn path's
cut of a tool result (``turn.tool_results``), so the turn never has to cut a
memory tool's JSON blindly.

Where an answer is cut it says so (``"truncated": true`` in JSON shapes, a
last ``more: ...`` line in plain text) and names the way to continue (a
``next_cursor``). Strings are cut as Python text *before* they are encoded,
so a JSON escape or a surrogate pair is never split.

Configuration: the store option ``max_answer_chars``, else the environment
variable ``STRATAMEM_MAX_ANSWER_CHARS``, else ``DEFAULT_MAX_ANSWER_CHARS``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .errors import ValidationError

__all__ = [
    "DEFAULT_MAX_ANSWER_CHARS",
    "ENV_MAX_ANSWER_CHARS",
    "MIN_ANSWER_CHARS",
    "check_max_answer_chars",
    "resolve_max_answer_chars",
]

DEFAULT_MAX_ANSWER_CHARS = 50_000  # about 12k tokens: a tool answer leaves room for the conversation
MIN_ANSWER_CHARS = 4_096  # room for one entry, the marker and the longest cursor
ENV_MAX_ANSWER_CHARS = "STRATAMEM_MAX_ANSWER_CHARS"


def check_max_answer_chars(value: object, where: str = "max_answer_chars") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_ANSWER_CHARS:
        raise ValidationError(f"{where} must be an integer of at least {MIN_ANSWER_CHARS} characters")
    return value


def resolve_max_answer_chars(value: object = None, env: Mapping[str, str] | None = None) -> int:
    """The explicit value, else ``STRATAMEM_MAX_ANSWER_CHARS``, else the default; checked either way."""
    if value is not None:
        return check_max_answer_chars(value)
    raw = (os.environ if env is None else env).get(ENV_MAX_ANSWER_CHARS, "").strip()
    if not raw:
        return DEFAULT_MAX_ANSWER_CHARS
    try:
        number = int(raw.replace("_", ""))
    except ValueError:
        raise ValidationError(f"{ENV_MAX_ANSWER_CHARS} must be an integer") from None
    return check_max_answer_chars(number, ENV_MAX_ANSWER_CHARS)
