"""Removing secrets from text: operator REDACT decisions, and credentials anywhere text leaves us.

Two jobs, both pure:

- :func:`redact_text` / :func:`redact_fields` carry out a REDACT decision of
  an operator rule: what its ``matches`` (regex) and ``contains`` (literal)
  conditions describe; a rule with neither redacts the whole text, because the
  operator asked for redaction without saying of what. In JSON shapes only
  the named content fields change, so the answer stays valid and its keys,
  levels and times stay truthful.
- :func:`redact_secrets` is THE credential scrubber: observer events
  (``stratamem.turn``), error messages (tools, REST, MCP, the CLI) and
  anything else that leaves the process pass through it. Detection is in
  ``credentials``; here each found value is masked. It errs on the side of
  masking too much: a false positive costs a little context, a false negative
  leaks a secret. Time is bounded: text longer than ``MAX_SCRUB_CHARS`` is
  cut (at a whitespace when one is near) and the rest is dropped, not passed
  through unscanned.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterable
from typing import Any

from .conditions import compiled
from .credentials import find_credentials
from .model import Decision

REDACTED = "[REDACTED]"
CONTENT_FIELDS = ("content",)
MAX_SCRUB_CHARS = 64 * 1024
_CUT_SEARCH = 4 * 1024
_MASK_SUFFIX = "*" + REDACTED


def redact_text(text: str, decision: Decision) -> str:
    if not decision.patterns and not decision.literals:
        return REDACTED
    for pattern in decision.patterns:
        text = compiled(pattern).sub(REDACTED, text)
    for literal in decision.literals:
        if literal:
            text = text.replace(literal, REDACTED)
    return text


def redact_fields(value: Any, decision: Decision, fields: Iterable[str] = CONTENT_FIELDS) -> Any:
    """A copy of a JSON-like value with every string under one of ``fields`` redacted."""
    names = frozenset(fields)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: redact_text(v, decision) if k in names and isinstance(v, str) else walk(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(value)


def mask_secret(value: str) -> str:
    """Keep a short prefix so operators can tell which credential it was.

    Values of 12 characters or fewer are redacted entirely: a 4-character
    prefix of a short password would give away a third of it.
    """
    if REDACTED[:-1] in value:  # already masked
        return value
    if len(value) <= 12:
        return REDACTED
    return value[:4] + _MASK_SUFFIX


def _bounded(text: str) -> tuple[str, str]:
    """``text`` cut to what will be scanned, and the note that replaces the rest."""
    if len(text) <= MAX_SCRUB_CHARS:
        return text, ""
    cut = max(
        text.rfind(" ", MAX_SCRUB_CHARS - _CUT_SEARCH, MAX_SCRUB_CHARS),
        text.rfind("\n", MAX_SCRUB_CHARS - _CUT_SEARCH, MAX_SCRUB_CHARS),
    )
    cut = cut if cut > 0 else MAX_SCRUB_CHARS - _CUT_SEARCH
    return text[:cut], f" [... {len(text) - cut} more characters omitted]"


def redact_secrets(text: str) -> str:
    """``text`` with every credential found masked (see ``credentials.find_credentials``)."""
    if not isinstance(text, str) or not text:
        return text
    text, note = _bounded(text)
    pieces: list[str] = []
    last = 0
    for start, end in find_credentials(text):
        pieces.append(text[last:start])
        pieces.append(mask_secret(text[start:end]))
        last = end
    pieces.append(text[last:])
    return "".join(pieces) + note


class _ScrubRecords(logging.Filter):
    """Passes a log record on with its message and traceback through :func:`redact_secrets`.

    An unexpected error's traceback quotes the values it failed on (a request's
    arguments, a row), and log files outlive the request: they leave the process
    like any error message does, so they pass the same scrubber.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact_secrets(record.getMessage())
        record.args = None
        if record.exc_info is not None and record.exc_info[0] is not None:
            record.exc_text = redact_secrets(
                "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            )
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = redact_secrets(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_secrets(record.stack_info)
        return True


_SCRUB_RECORDS = _ScrubRecords()


def scrubbed_logger(name: str) -> logging.Logger:
    """The logger ``name`` with every record it emits scrubbed of credentials (see ``_ScrubRecords``)."""
    logger = logging.getLogger(name)
    if _SCRUB_RECORDS not in logger.filters:
        logger.addFilter(_SCRUB_RECORDS)
    return logger


__all__ = ["REDACTED", "mask_secret", "redact_fields", "redact_secrets", "redact_text", "scrubbed_logger"]
