"""Rendering tool specs in each model provider's tool-definition format.

The schema is the same everywhere; only the envelope differs:

- ``openai``: ``{"type": "function", "function": {"name", "description", "parameters"}}``
- ``anthropic``: ``{"name", "description", "input_schema"}``
- ``mcp``: ``{"name", "description", "inputSchema"}``
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ValidationError
from .specs import ToolSpec, parameters_schema


def openai(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": parameters_schema(spec),
        },
    }


def anthropic(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": parameters_schema(spec)}


def mcp(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "inputSchema": parameters_schema(spec)}


DIALECTS: dict[str, Callable[[ToolSpec], dict[str, Any]]] = {
    "openai": openai,
    "anthropic": anthropic,
    "mcp": mcp,
}


def renderer(dialect: str) -> Callable[[ToolSpec], dict[str, Any]]:
    try:
        return DIALECTS[dialect]
    except (KeyError, TypeError):
        raise ValidationError(
            f"unknown dialect {dialect!r}; valid dialects are {', '.join(DIALECTS)}"
        ) from None
