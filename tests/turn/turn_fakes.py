"""Small stand-ins for the core store's session, memory and hit types."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import IntEnum

NOW = datetime(2025, 1, 15, 12, 0, tzinfo=UTC)


class Level(IntEnum):
    PUBLIC = 0
    INTERNAL = 1
    CONFIDENTIAL = 2
    RESTRICTED = 3


@dataclass(frozen=True)
class FakeMemory:
    key: str
    content: str
    category: str = "core"
    level: Level = Level.INTERNAL
    tags: tuple[str, ...] = ()
    updated_at: datetime = NOW
    agent_id: str | None = None


@dataclass(frozen=True)
class FakeHit:
    memory: FakeMemory
    score: float = 0.0


def hit(key: str, content: str, score: float = 0.0, **kwargs: object) -> FakeHit:
    return FakeHit(FakeMemory(key, content, **kwargs), score)  # type: ignore[arg-type]


@dataclass
class FakeSession:
    """Canned search results; records queries and saves."""

    hits: Sequence[FakeHit] = ()
    taint: Level = Level.PUBLIC
    fail_search: bool = False
    fail_save: bool = False
    queries: list[tuple[str, int]] = field(default_factory=list)
    saved: list[tuple[str, str, str]] = field(default_factory=list)

    def search(self, query: str, max_results: int) -> list[FakeHit]:
        self.queries.append((query, max_results))
        if self.fail_search:
            raise ConnectionError("index unavailable")
        return list(self.hits)[:max_results]

    def save(self, key: str, content: str, category: str = "core") -> None:
        if self.fail_save:
            raise PermissionError("write below session level")
        self.saved.append((key, content, category))


def fixed_clock() -> datetime:
    return NOW
