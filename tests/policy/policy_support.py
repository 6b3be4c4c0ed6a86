"""Helpers shared by the policy tests (a module, not a conftest, so it never shadows tests/conftest.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import stratamem as sm
from stratamem.levels import Level
from stratamem.policy import facts
from stratamem.policy.model import HookPoint
from stratamem.storage.records import SessionRecord


class TickingClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def new_store() -> sm.Store:
    return sm.open_store(":memory:", clock=TickingClock())


def record(taint: Level = Level.PUBLIC, agent: str = "main") -> SessionRecord:
    return SessionRecord("s1", agent, Level.RESTRICTED, (), taint, datetime(2026, 1, 1, tzinfo=UTC))


def call_facts(tool: str = "memory_save", taint: Level = Level.PUBLIC, **arguments: Any) -> dict[str, Any]:
    """PRE_TOOL_CALL facts for a call, as the executor builds them."""
    kept, stripped, requested = facts.strip_forced(arguments)
    base = facts.session_facts(
        HookPoint.PRE_TOOL_CALL, record(taint), origin="cli", channel="chat", read_only=False
    )
    return facts.tool_call_facts(
        base,
        tool,
        "triggerfish",
        kept,
        is_write=tool == "memory_save",
        stripped=stripped,
        requested=requested,
    )
