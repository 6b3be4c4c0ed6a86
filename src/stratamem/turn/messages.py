"""The chat message shape shared by history, trimming and the turn helper.

Messages are immutable so that trimming and context injection can be pure
functions that return new lists instead of editing what the caller holds.
The dict form follows the common chat-completions layout so runtimes can
convert at the boundary with :meth:`Message.to_dict` / :meth:`Message.from_dict`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ValidationError

__all__ = ["ROLES", "Message", "ToolCallRequest"]

ROLES = frozenset({"system", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call requested by the assistant; ``arguments`` is JSON text."""

    id: str
    name: str
    arguments: str = "{}"

    def __post_init__(self) -> None:
        if not self.id:
            raise ValidationError("a tool call needs a non-empty id")
        if not self.name:
            raise ValidationError(f"tool call {self.id!r} needs a non-empty name")

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCallRequest:
        arguments = data.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        return cls(id=str(data.get("id", "")), name=str(data.get("name", "")), arguments=arguments)


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message.  A ``tool`` message answers the call ``tool_call_id``."""

    role: str
    content: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = field(default=())
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValidationError(f"unknown message role {self.role!r}; expected one of {sorted(ROLES)}")
        if self.tool_calls and self.role != "assistant":
            raise ValidationError("only assistant messages can carry tool calls")
        if self.role == "tool" and not self.tool_call_id:
            raise ValidationError("a tool message needs the tool_call_id it answers")
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        calls: Sequence[Mapping[str, Any]] = data.get("tool_calls") or ()
        return cls(
            role=str(data.get("role", "")),
            content=str(data.get("content") or ""),
            tool_calls=tuple(ToolCallRequest.from_dict(c) for c in calls),
            tool_call_id=data.get("tool_call_id"),
        )
