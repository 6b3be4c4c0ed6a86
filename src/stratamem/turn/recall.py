"""Recall into a turn's prompt, through the same policy path as the memory tools.

Order, each step only narrowing what the previous one allowed:

1. the store's search for the session (taint, agents, shadowing, noninterference)
   under the conversation scope the origin's rule gives (``origins.RECALL``):
   this session's conversation memories for a turn a person started, none
   for any other;
2. ``Policy.prepare_context`` (PRE_CONTEXT_INJECTION): quarantined memories
   are dropped, operator hooks and rules BLOCK or REDACT each memory, and one
   ``policy.decision`` audit event records the lineage ids injected;
3. noise, decay, the relevance floor (term coverage, in every search mode) and the
   size caps (``context``).

A prompt block is a convenience, never a requirement: a failing search or
policy check renders nothing (fail closed) and says so in the event.

``render.render_memory_context`` is the entry for any session a runtime holds;
it sends a real session here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..models import Hit, Memory
from ..policy.engine import DEFAULT_POLICY, Policy
from ..text import Analyzer
from .context import (
    BLOCK_CLOSE,
    BLOCK_OVERHEAD,
    ContextConfig,
    MemoryLike,
    SearchableSession,
    fit_lines,
    format_memory_block,
    parse_origin,
    recall_policy,
    select_entries,
)
from .observe import EventBus, MemoryRecall, emit, error_summary, listening
from .related import with_related
from .scrub import QUERY_SUMMARY_CHARS, summarize_query

if TYPE_CHECKING:
    from ..session import Session

__all__ = ["QUERY_SUMMARY_CHARS", "RecallResult", "block_lines", "recall_block", "summarize_query"]


@dataclass(frozen=True, slots=True)
class RecallResult:
    block: str
    found: int  # hits the store returned
    injected: int  # entries in the block
    withheld: int  # dropped by policy


def term_coverage(analyzer: Analyzer, query: str) -> Callable[[Any], float]:
    """The share of the query's (stemmed, stopword-free) terms found in a memory's key, content and tags."""
    terms = set(analyzer.query_terms(query))

    def share(memory: Any) -> float:
        if not terms:
            return 1.0
        held, _ = analyzer.document_terms(memory.key, memory.content, memory.tags)
        return len(terms & held.keys()) / len(terms)

    return share


def recall_block(
    session: Session,
    query: str,
    origin: str,
    config: ContextConfig,
    now: datetime,
    *,
    policy: Policy | None = None,
    events: EventBus | None = None,
    exclude: Callable[[Memory], bool] | None = None,
) -> RecallResult:
    """Render the ``[Memory context]`` block for ``query``; emits one :class:`MemoryRecall` event.

    ``exclude`` drops hits before anything else counts them (a turn leaves out what it wrote itself).
    """
    started = time.perf_counter()
    origin_name = parse_origin(origin).value
    plan = recall_policy(origin_name, (session.id,), suppress=config.suppress)

    def event(**fields: object) -> None:
        if not listening(events):
            return
        duration = round((time.perf_counter() - started) * 1000, 3)
        summary = summarize_query(query)
        emit(events, MemoryRecall(origin=origin_name, query_summary=summary, duration_ms=duration, **fields))  # type: ignore[arg-type]

    if not plan.inject or config.max_entries == 0 or not query.strip():
        event(entry_count=0, success=True, suppressed=True)
        return RecallResult("", 0, 0, 0)
    try:
        hits: Sequence[Hit] = session.search(
            query, max_results=config.search_limit, conversations=plan.conversations
        )
        if exclude is not None:
            hits = [h for h in hits if not exclude(h.memory)]
        allowed = (policy or DEFAULT_POLICY).prepare_context(
            session, [h.memory for h in hits], origin=origin_name
        )
        by_lineage = {m.lineage_id: m for m in allowed}
        passed = [
            Hit(by_lineage[h.memory.lineage_id], h.score) for h in hits if h.memory.lineage_id in by_lineage
        ]
        # The term-coverage floor holds in every mode: the model's similarity floor lets through most of
        # what an unrelated question finds by meaning (bench/bench_relevance.py, docs/search-relevance.md).
        memories = select_entries(
            passed,
            config,
            now,
            include_conversation=plan.include_conversation,
            coverage=term_coverage(session.store.analyzer, query),
        )
        lines = block_lines(session, memories, query, config)
    except Exception as exc:  # noqa: BLE001 - recall must not fail the turn
        event(entry_count=0, success=False, error=error_summary(exc))
        return RecallResult("", 0, 0, 0)
    withheld = len(hits) - len(passed)
    event(entry_count=len(lines), success=True, found=len(hits), withheld=withheld)
    return RecallResult(format_memory_block(lines), len(hits), len(lines), withheld)


def block_lines(
    session: SearchableSession, memories: Sequence[MemoryLike], query: str, config: ContextConfig
) -> list[str]:
    """The block's lines: the entries that fit, then the memories related to them."""
    return with_related(
        session,
        fit_lines(memories, config),
        [m.key for m in memories],
        query,
        config,
        BLOCK_OVERHEAD,
        BLOCK_CLOSE,
    )
