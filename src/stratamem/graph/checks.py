"""Input checks for graph writes, run before anything is written.

Names, types and relations are identifiers: any Unicode except control
characters and lone surrogates, bounded length. Observations and content are
free text (NUL refused, so every backend stores them byte for byte). Limits
keep one node's answer bounded: an observation is at most
``MAX_OBSERVATION_CHARS`` and a node holds at most ``MAX_OBSERVATIONS_PER_NODE``
visible observations of its own agent.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

from ..errors import ValidationError
from ..validation import check_tags
from .model import EdgeDraft, NodeDraft

MAX_NAME_CHARS = 256
MAX_TYPE_CHARS = 128
MAX_NOTE_CHARS = 1_000
MAX_SOURCE_CHARS = 256
MAX_OBSERVATION_CHARS = 4_096
MAX_OBSERVATIONS_PER_CALL = 1_000
MAX_OBSERVATIONS_PER_NODE = 1_000
MAX_BATCH = 1_000
DEFAULT_TYPE = "thing"


def _text(value: object, what: str, limit: int, *, identifier: bool) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string")
    if identifier and not value.strip():
        raise ValidationError(f"{what} must not be empty")
    if len(value) > limit:
        raise ValidationError(f"{what} is {len(value)} characters long; the limit is {limit}")
    if identifier and any(unicodedata.category(ch) == "Cc" for ch in value):
        raise ValidationError(f"{what} must not contain control characters")
    if "\x00" in value:
        raise ValidationError(f"{what} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{what} is not valid UTF-8 text") from None
    return value


def check_name(value: object, what: str = "name") -> str:
    return _text(value, what, MAX_NAME_CHARS, identifier=True)


def check_type(value: object, what: str = "type") -> str:
    return _text(value, what, MAX_TYPE_CHARS, identifier=True)


def check_observation(value: object) -> str:
    text = _text(value, "observation", MAX_OBSERVATION_CHARS, identifier=False)
    if not text.strip():
        raise ValidationError("observation must not be empty")
    return text


def check_observations(values: object) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise ValidationError("observations must be a list of strings")
    if len(values) > MAX_OBSERVATIONS_PER_CALL:
        raise ValidationError(f"at most {MAX_OBSERVATIONS_PER_CALL} observations per call")
    return tuple(dict.fromkeys(check_observation(v) for v in values))


def check_note(value: object) -> str | None:
    return None if value is None else _text(value, "note", MAX_NOTE_CHARS, identifier=False)


def check_source(value: object) -> str | None:
    return None if value is None else _text(value, "source", MAX_SOURCE_CHARS, identifier=False)


def check_batch(values: object, what: str) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise ValidationError(f"{what} must be a list")
    if len(values) > MAX_BATCH:
        raise ValidationError(f"at most {MAX_BATCH} {what} per call")
    return list(values)


def check_names(values: object, what: str = "names") -> tuple[str, ...]:
    return tuple(dict.fromkeys(check_name(v, "name") for v in check_batch(values, what)))


def node_draft(
    name: object,
    type_: object = DEFAULT_TYPE,
    content: object = "",
    tags: Iterable[str] = (),
    observations: object = (),
    source: object = None,
    max_content_bytes: int = 64 * 1024,
) -> NodeDraft:
    text = _text(content if content is not None else "", "content", max_content_bytes, identifier=False)
    if len(text.encode("utf-8")) > max_content_bytes:
        raise ValidationError(f"content is larger than {max_content_bytes} bytes")
    return NodeDraft(
        check_name(name),
        check_type(type_ if type_ is not None else DEFAULT_TYPE),
        text,
        check_tags(tags),
        check_observations(observations or ()),
        check_source(source),
    )


def edge_draft(source: object, target: object, relation: object, note: object = None) -> EdgeDraft:
    return EdgeDraft(
        check_name(source, "from"),
        check_name(target, "to"),
        check_type(relation, "relation"),
        check_note(note),
    )
