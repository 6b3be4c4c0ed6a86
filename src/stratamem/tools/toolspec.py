"""What a tool spec is: ``Param``, ``ToolSpec``, the profile names, and a spec's JSON Schema.

The specs themselves are data in ``specs.py`` (memory tools) and
``graph_specs.py`` (graph tools); both build on this module, and ``specs.py``
gathers them into the profiles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..paging import MAX_CURSOR_CHARS, MAX_PAGE_SIZE
from ..validation import MAX_CATEGORY_CHARS, MAX_CONTEXT_CHARS, MAX_KEY_CHARS, MAX_TAG_CHARS, MAX_TAGS

TRIGGERFISH = "triggerfish"
ZEROCLAW = "zeroclaw"
MCP_MEMORY = "mcp-memory"
PROFILES = (TRIGGERFISH, ZEROCLAW, MCP_MEMORY)

MAX_TEXT_CHARS = 10_000  # free-text filters such as a tag or a session id


@dataclass(frozen=True, slots=True)
class Param:
    """One argument. ``kind`` selects both its JSON Schema and its check."""

    name: str
    kind: str  # key | content | tags | query | text | category | count | page | cursor | offset | time | json | items
    description: str
    required: bool = False
    default: Any = None
    schema: dict[str, Any] | None = None  # kinds "json" and "items": the JSON Schema


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    profile: str
    description: str
    params: tuple[Param, ...]
    writes: bool = False  # refused in read-only sessions, scanned for poisoning when it carries content
    # A tool whose ``action`` argument decides: these actions are writes (refused read-only, scanned).
    write_actions: frozenset[str] = frozenset()
    # The texts a write stores, for the poisoning scanner (default: key, content, category, tags).
    texts: Callable[[dict[str, Any]], Iterable[object]] | None = None

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


def _kind_schema(param: Param) -> dict[str, Any]:
    kind = param.kind
    if kind == "key":
        return {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS}
    if kind == "content":
        return {"type": "string", "minLength": 1}
    if kind == "tags":
        return {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": MAX_TAG_CHARS},
            "maxItems": MAX_TAGS,
        }
    if kind == "query":
        return {"type": "string"}
    if kind == "text":
        return {"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS}
    if kind == "category":
        return {"type": "string", "minLength": 1, "maxLength": MAX_CATEGORY_CHARS}
    if kind == "count":
        return {"type": "integer", "minimum": 1, "maximum": 100}
    if kind == "page":
        return {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE}
    if kind in ("cursor", "offset"):
        return {"type": "string", "minLength": 1, "maxLength": MAX_CURSOR_CHARS}
    if kind == "time":
        return {"type": "string", "format": "date-time"}
    if kind == "context":
        return {"type": "string", "maxLength": MAX_CONTEXT_CHARS}
    if kind in ("json", "items") and param.schema is not None:
        return dict(param.schema)
    raise ValueError(f"unknown parameter kind {kind!r}")


def parameters_schema(spec: ToolSpec) -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12 compatible) of a tool's arguments."""
    properties: dict[str, Any] = {}
    for param in spec.params:
        schema = {**_kind_schema(param), "description": param.description}
        if param.default is not None:
            schema["default"] = param.default
        properties[param.name] = schema
    return {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in spec.params if p.required],
    }
