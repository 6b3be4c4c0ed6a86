"""Checking a tool call's arguments against its spec, before anything runs.

Pure: returns the cleaned arguments (declared parameters only, defaults
filled in) or raises ``ValidationError`` with a message the model can act
on. Messages name the argument, never echo its value (it may be a secret).
Unknown arguments are ignored — models often add harmless extras — and the
level/agent arguments never reach here (the policy layer strips them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ..errors import ValidationError
from ..paging import DEFAULT_PAGE_SIZE, decode_cursor, decode_offset, page_size
from ..policy.scanner import RESERVED_TAG_PREFIX
from ..save_many import DEFAULT_MAX_BATCH
from ..validation import (
    check_category,
    check_content,
    check_context,
    check_key,
    check_tags,
    check_text,
    clamp_max_results,
    parse_time,
)
from .specs import MAX_TEXT_CHARS, Param, ToolSpec


def _string(param: Param, value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{param.name} must be a string")
    return value


def _encodable_text(param: Param, value: object) -> str:
    """A string stored or compared in the store: lone surrogates cannot be, so they are refused here."""
    return check_text(_string(param, value), param.name, MAX_TEXT_CHARS)


def _text(param: Param, value: object) -> str:
    text = _string(param, value)
    if not text:
        raise ValidationError(f"{param.name} must not be empty")
    return _encodable_text(param, text)


def _tags(param: Param, value: object) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise ValidationError(f"{param.name} must be a list of strings")
    tags = check_tags(value)
    if any(tag.startswith(RESERVED_TAG_PREFIX) for tag in tags):
        raise ValidationError(f"tags starting with {RESERVED_TAG_PREFIX!r} are reserved")
    return tags


def _time(param: Param, value: object) -> datetime:
    return parse_time(_string(param, value), param.name)


def _cursor(param: Param, value: object) -> str:
    decode_cursor(value)  # a malformed cursor is a VALIDATION_ERROR here, before anything runs
    return _string(param, value)


def _offset(param: Param, value: object) -> str:
    decode_offset(value)  # a ranked answer's cursor: checked before anything runs
    return _string(param, value)


def _count(param: Param, value: object) -> int:
    # CONTRACT section 5: a non-integer falls back to the default, an integer is clamped to 1..100.
    return clamp_max_results(value, default=param.default or 10)


CHECKS: dict[str, Callable[[Param, object], Any]] = {
    "key": lambda p, v: check_key(v),
    "tags": _tags,
    "query": _string,
    "text": _text,
    "category": lambda p, v: check_category(v),
    "count": _count,
    "page": lambda p, v: page_size(v, default=p.default or DEFAULT_PAGE_SIZE),
    "cursor": _cursor,
    "offset": _offset,
    "time": _time,
    "context": lambda p, v: check_context(v),
    "json": lambda p, v: v,  # shaped data (graph tools): the handler checks it with the graph's own checks
}


def _items(param: Param, value: object, max_batch: int) -> list[dict[str, Any]]:
    """A batch tool's items: a bounded list of objects, each cut down to the fields its schema declares.

    Other fields (``classification``, ``level``, ``agent_id`` among them) are dropped as a single
    call's unknown arguments are: the level is always the live taint. Each field's own check
    (key, content, tags, category) runs in ``batch.check_batch``, which names the bad item's index.
    """
    if not isinstance(value, (list, tuple)) or not value:
        raise ValidationError(f"{param.name} must be a non-empty list of objects with key and content")
    if len(value) > max_batch:
        raise ValidationError(
            f"batch too large: {len(value)} items, the maximum is {max_batch}; split it into several calls"
        )
    fields = tuple((param.schema or {}).get("items", {}).get("properties", {}))
    items: list[dict[str, Any]] = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise ValidationError(f"item {index}: must be an object with key and content")
        kept = {name: item[name] for name in fields if item.get(name) is not None}
        tags = kept.get("tags")
        if isinstance(tags, (list, tuple)) and any(
            isinstance(tag, str) and tag.startswith(RESERVED_TAG_PREFIX) for tag in tags
        ):
            raise ValidationError(f"item {index}: tags starting with {RESERVED_TAG_PREFIX!r} are reserved")
        items.append(kept)
    return items


def parse_arguments(
    spec: ToolSpec,
    arguments: Mapping[str, Any],
    *,
    max_content_bytes: int,
    max_batch: int = DEFAULT_MAX_BATCH,
) -> dict[str, Any]:
    """The cleaned arguments of a call to ``spec``, or ``ValidationError``."""
    if not isinstance(arguments, Mapping):
        raise ValidationError("arguments must be a JSON object")
    cleaned: dict[str, Any] = {}
    for param in spec.params:
        value = arguments.get(param.name)
        if value is None:
            if param.required:
                raise ValidationError(f"missing required argument {param.name!r}")
            cleaned[param.name] = param.default
            continue
        if param.kind == "content":
            cleaned[param.name] = check_content(value, max_content_bytes)
        elif param.kind == "items":
            cleaned[param.name] = _items(param, value, max_batch)
        else:
            cleaned[param.name] = CHECKS[param.kind](param, value)
    return cleaned
