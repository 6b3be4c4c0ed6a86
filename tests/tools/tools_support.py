"""Helpers shared by the tool tests (a module, not a conftest, so it never shadows tests/conftest.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import stratamem as sm
from stratamem.tools import execute

START = datetime(2026, 1, 1, tzinfo=UTC)


class TickingClock:
    """Strictly increasing time, one millisecond per reading."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def new_store(**options: Any) -> sm.Store:
    options.setdefault("clock", TickingClock())
    return sm.open_store(":memory:", **options)


def fixed_clock_store() -> sm.Store:
    """A store whose clock never moves, so two stores fed different histories print equal times."""
    return sm.open_store(":memory:", clock=lambda: START)


def call(session: sm.Session, name: str, **arguments: Any) -> Any:
    """Run a tool and parse its JSON answer."""
    text = execute(session, name, arguments)
    assert isinstance(text, str)
    return json.loads(text)


def error_code(text: str | None) -> str | None:
    try:
        data = json.loads(text or "")
    except ValueError:
        return None
    return data["error"]["code"] if isinstance(data, dict) and "error" in data else None
