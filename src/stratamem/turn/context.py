"""Recalled memory, rendered into the prompt of a turn.

Recall goes through the *session*, so the classification and agent rules of
the store decide what can be seen at all; this module only narrows further:
by where the turn came from, by noise and staleness, and by size.  A prompt
block is a convenience, never a requirement, so a failing search renders
nothing instead of failing the turn.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from .errors import ValidationError
from .messages import Message
from .noise import is_noise_content, is_noise_key
from .origins import Origin, RecallPolicy, parse_origin, recall_policy
from .textcut import ellipsize

__all__ = [
    "BLOCK_CLOSE",
    "BLOCK_OPEN",
    "Clock",
    "ContextConfig",
    "Origin",
    "RecallPolicy",
    "decayed_score",
    "fit_lines",
    "format_memory_block",
    "inject_memory_context",
    "is_recallable",
    "parse_origin",
    "recall_policy",
    "select_entries",
    "strip_memory_context",
]

BLOCK_OPEN = "[Memory context]"
BLOCK_CLOSE = "[/Memory context]"
_HEAD = f"{BLOCK_OPEN}\n"
_TAIL = f"{BLOCK_CLOSE}\n\n"
BLOCK_OVERHEAD = len(_HEAD) + len(_TAIL)
_SECONDS_PER_DAY = 86_400.0
_BLOCK_RE = re.compile(re.escape(_HEAD) + r".*?" + re.escape(_TAIL), re.DOTALL)

Clock = Callable[[], datetime]
DEFAULT_MIN_RELEVANCE = 0.0  # BM25 units mean different things in stores of different sizes
DEFAULT_RELATIVE_FLOOR = 0.0
DEFAULT_MIN_COVERAGE = 0.21  # more than a fifth of the query terms; bench/bench_recall_floor.py


class MemoryLike(Protocol):
    """The memory fields recall reads (read-only, so frozen records match)."""

    @property
    def key(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def level(self) -> Any: ...
    @property
    def category(self) -> str: ...
    @property
    def updated_at(self) -> datetime: ...


class HitLike(Protocol):
    @property
    def memory(self) -> MemoryLike: ...
    @property
    def score(self) -> float: ...


class SearchableSession(Protocol):
    def search(self, query: str, max_results: int) -> Sequence[HitLike]: ...


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """Bounds and switches for the memory-context block.

    The relevance floor: ``min_coverage`` (on by default, at the value
    ``bench/bench_recall_floor.py`` measured on LoCoMo, README) drops a hit
    holding no more than that share of the query's terms; ``min_relevance``
    (absolute, BM25 units, which shift with the store's size) and
    ``relative_floor`` (a share of the best hit's score) apply to the
    decayed score and are off by default. Unscored hits (score 0.0) are
    never dropped by a floor because the backend had no score to give.
    ``half_life_days`` of 0 turns decay off.  ``search_limit`` over-fetches
    so that filtering still leaves ``max_entries`` candidates.
    """

    max_entries: int = 4
    max_entry_chars: int = 800
    max_total_chars: int = 4000
    min_relevance: float = DEFAULT_MIN_RELEVANCE
    relative_floor: float = DEFAULT_RELATIVE_FLOOR
    min_coverage: float = DEFAULT_MIN_COVERAGE
    half_life_days: float = 7.0
    search_limit: int = 16
    suppress: bool = False
    show_levels: bool = False
    related_entries: int = 0  # > 0 adds graph links around what was recalled (turn/related.py)

    def __post_init__(self) -> None:
        for name in ("max_entries", "max_entry_chars", "max_total_chars", "search_limit", "related_entries"):
            if getattr(self, name) < 0:
                raise ValidationError(f"ContextConfig.{name} must be >= 0")
        for name in ("min_relevance", "half_life_days", "relative_floor", "min_coverage"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValidationError(f"ContextConfig.{name} must be a finite number >= 0")
        if self.relative_floor > 1 or self.min_coverage > 1:
            raise ValidationError("ContextConfig.relative_floor and min_coverage must be <= 1")


def is_recallable(memory: MemoryLike, *, include_conversation: bool) -> bool:
    """False for noise, transcripts, stale tool output and inline images.

    Entries that contain the closing block marker are skipped as well: they
    would end the block early and break idempotent re-injection.
    """
    content = memory.content
    return not (
        (memory.category == "conversation" and not include_conversation)
        or is_noise_key(memory.key)
        or memory.key.endswith("_history")
        or is_noise_content(content)
        or "<tool_result" in content
        or "[IMAGE:" in content
        or BLOCK_CLOSE in content
    )


def decayed_score(
    score: float, category: str, updated_at: datetime, now: datetime, half_life_days: float
) -> float:
    """Halve a non-core entry's relevance every ``half_life_days`` of age.

    Core memories are standing facts and do not go stale.
    """
    if score == 0.0 or category == "core" or half_life_days == 0:
        return score
    if updated_at.tzinfo is None:
        updated_at = updated_at.replace(tzinfo=UTC)
    age_days = max(0.0, (now - updated_at).total_seconds() / _SECONDS_PER_DAY)
    return score * math.pow(0.5, age_days / half_life_days)


def select_entries(
    hits: Sequence[HitLike],
    config: ContextConfig,
    now: datetime,
    *,
    include_conversation: bool,
    coverage: Callable[[MemoryLike], float] | None = None,
) -> list[MemoryLike]:
    """Filter, decay, floor, rank and cap the recalled hits.

    ``coverage`` (the share of the query's terms a memory holds; see
    ``recall.term_coverage``) is floored by ``min_coverage``: unlike a BM25
    score it means the same in a store of ten memories and of a million.

    The sort is stable, so hits with equal scores (e.g. all unscored) keep
    the backend's order.  Duplicate keys keep their first hit.
    """
    scored: list[tuple[float, MemoryLike]] = []
    seen: set[str] = set()
    for hit in hits:
        memory = hit.memory
        if memory.key in seen or not is_recallable(memory, include_conversation=include_conversation):
            continue
        seen.add(memory.key)
        score = decayed_score(
            float(hit.score), memory.category, memory.updated_at, now, config.half_life_days
        )
        if hit.score != 0.0 and score < config.min_relevance:
            continue
        scored.append((score, memory))
    best = max((score for score, _ in scored), default=0.0)
    if best > 0.0 and config.relative_floor > 0.0:
        scored = [(s, m) for s, m in scored if s == 0.0 or s >= config.relative_floor * best]
    scored.sort(key=lambda pair: pair[0], reverse=True)
    chosen: list[MemoryLike] = []
    for score, memory in scored:  # coverage last, and only until the cap: it re-reads the text
        if len(chosen) == config.max_entries:
            break
        if (
            score != 0.0
            and coverage is not None
            and config.min_coverage
            and coverage(memory) < config.min_coverage
        ):
            continue
        chosen.append(memory)
    return chosen


def _format_line(memory: MemoryLike, config: ContextConfig) -> str:
    label = f" [{memory.level.name}]" if config.show_levels else ""
    content = ellipsize(memory.content.strip(), config.max_entry_chars)
    return f"- {memory.key}{label}: {content}\n"


def fit_lines(memories: Sequence[MemoryLike], config: ContextConfig) -> list[str]:
    """Entry lines, in rank order, until the first that would overflow the block.

    Stopping (rather than skipping to a smaller, lower-ranked entry) keeps
    the block in relevance order.
    """
    used = len(_HEAD) + len(_TAIL)
    lines: list[str] = []
    for memory in memories:
        line = _format_line(memory, config)
        if used + len(line) > config.max_total_chars:
            break
        lines.append(line)
        used += len(line)
    return lines


def format_memory_block(lines: Sequence[str]) -> str:
    """Wrap entry lines in the block markers; no lines, no block."""
    return _HEAD + "".join(lines) + _TAIL if lines else ""


def strip_memory_context(text: str) -> str:
    """Remove a leading memory block, if any (the inverse of injection)."""
    match = _BLOCK_RE.match(text)
    return text[match.end() :] if match else text


def inject_memory_context(messages: Sequence[Message], block: str) -> list[Message]:
    """Prepend ``block`` to the last user message, replacing an earlier block.

    Idempotent, so a retried turn never carries two blocks; an empty
    ``block`` removes a stale one.  Returns a new list.
    """
    result = list(messages)
    for index in range(len(result) - 1, -1, -1):
        message = result[index]
        if message.role == "user":
            content = block + strip_memory_context(message.content)
            result[index] = replace(message, content=content)
            break
    return result
