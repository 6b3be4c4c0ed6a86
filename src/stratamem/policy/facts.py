"""The facts a rule condition can name, built from the live session record.

Pure functions, one per hook point, so what a rule sees is explicit and
testable. Levels are ``Level`` values (conditions compare them in lattice
order, ``taint gte CONFIDENTIAL``) and also plain ranks (``taint_rank``).
Computed fields:

- ``is_write``: the tool call writes or deletes memory.
- ``requested_level``: a level the caller *asked* for (a stripped
  ``classification``/``level`` argument), or ``None``.
- ``target_level``: where information goes: the taint for a memory write, the
  channel's level for output.
- ``write_down_violation``: the target (or requested) level is below the
  taint — information would flow down.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..levels import Level
from ..models import Memory
from ..storage.records import SessionRecord
from .model import HookPoint

# Arguments no tool caller may set: the level is always the live taint, the
# agent is always the session's own, and clearance and peers belong to the
# operator (CONTRACT sections 3, 4, 8). No tool declares them; stripping them
# makes the attempt visible to rules and the audit log.
FORCED_ARGUMENTS = ("classification", "level", "taint", "clearance", "agent_id", "agent", "peers")
LEVEL_ARGUMENTS = ("classification", "level", "taint")


def strip_forced(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...], Level | None]:
    """Arguments without the forced ones, the names removed, and the level that was asked for."""
    kept = {k: v for k, v in arguments.items() if k not in FORCED_ARGUMENTS}
    stripped = tuple(k for k in FORCED_ARGUMENTS if k in arguments)
    requested = None
    for name in LEVEL_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, str) and value.strip().upper() in Level.__members__:
            requested = Level[value.strip().upper()]
            break
    return kept, stripped, requested


def _levels(prefix: str, level: Level | None) -> dict[str, Any]:
    return {prefix: level, f"{prefix}_rank": int(level) if level is not None else None}


def session_facts(
    hook: HookPoint, record: SessionRecord, *, origin: str | None, channel: str | None, read_only: bool
) -> dict[str, Any]:
    return {
        "hook": hook.value,
        "session_id": record.id,
        "agent_id": record.agent_id,
        "peers": list(record.peers),
        **_levels("taint", record.taint),
        **_levels("clearance", record.clearance),
        "origin": origin,
        "channel": channel,
        "read_only": read_only,
    }


def _flow(taint: Level, target: Level | None, requested: Level | None = None) -> dict[str, Any]:
    lowest = min((lv for lv in (target, requested) if lv is not None), default=None)
    return {
        **_levels("target_level", target),
        "write_down_violation": lowest is not None and lowest < taint,
    }


def tool_call_facts(
    base: dict[str, Any],
    tool: str,
    profile: str,
    arguments: Mapping[str, Any],
    *,
    is_write: bool,
    stripped: Sequence[str] = (),
    requested: Level | None = None,
) -> dict[str, Any]:
    taint: Level = base["taint"]
    content = arguments.get("content")
    return {
        **base,
        "tool": tool,
        "profile": profile,
        "arguments": dict(arguments),
        "content": content if isinstance(content, str) else None,
        "is_write": is_write,
        "stripped_arguments": list(stripped),
        **_levels("requested_level", requested),
        **_flow(taint, taint if is_write else None, requested if is_write else None),
    }


def tool_response_facts(call_facts: dict[str, Any], response_text: str) -> dict[str, Any]:
    """The call's facts plus the answer text, for POST_TOOL_RESPONSE."""
    return {**call_facts, "hook": HookPoint.POST_TOOL_RESPONSE.value, "response": response_text}


def memory_facts(base: dict[str, Any], memory: Memory) -> dict[str, Any]:
    return {
        **base,
        "memory": {
            "key": memory.key,
            "classification": memory.level,
            "tags": list(memory.tags),
            "category": memory.category,
            "agent_id": memory.agent_id,
        },
        "key": memory.key,
        "content": memory.content,
        **_levels("memory_level", memory.level),
        **_flow(base["taint"], None),
    }


def output_facts(base: dict[str, Any], text: str, channel_level: Level) -> dict[str, Any]:
    return {
        **base,
        "content": text,
        **_levels("channel_level", channel_level),
        **_flow(base["taint"], channel_level),
    }
