"""Memory tools for LLM agents: definitions in each provider's format, and an executor.

``definitions(dialect, profile, read_only)`` lists the tools to hand to a
model; ``execute(session, name, arguments)`` runs one call through the policy
layer and returns the text to hand back. Both profiles (``triggerfish``, the
default, with JSON answers; ``zeroclaw``, with ZeroClaw's plain-text answers)
share the same policy and audit.
"""

from __future__ import annotations

from typing import Any

from ..policy.engine import Policy
from .dialects import DIALECTS, renderer
from .executor import execute
from .specs import PROFILES, TOOLS, TRIGGERFISH, ZEROCLAW, Param, ToolSpec, parameters_schema, specs


def definitions(
    dialect: str = "openai",
    profile: str = TRIGGERFISH,
    read_only: bool = False,
    *,
    policy: Policy | None = None,
) -> list[dict[str, Any]]:
    """Tool definitions for ``dialect`` (openai | anthropic | mcp) and ``profile``.

    Writing tools are left out when ``read_only`` is true or the ``policy``
    is read-only, so the model is never offered a tool it would be refused.
    """
    render = renderer(dialect)
    hide_writes = read_only or bool(policy is not None and policy.read_only)
    return [render(spec) for spec in specs(profile, read_only=hide_writes)]


def names(profile: str = TRIGGERFISH, read_only: bool = False) -> list[str]:
    """The tool names of a profile (without writing tools when read-only)."""
    return [spec.name for spec in specs(profile, read_only=read_only)]


__all__ = [
    "DIALECTS",
    "PROFILES",
    "TOOLS",
    "TRIGGERFISH",
    "ZEROCLAW",
    "Param",
    "ToolSpec",
    "definitions",
    "execute",
    "names",
    "parameters_schema",
    "specs",
]
