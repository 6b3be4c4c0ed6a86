"""Backend-neutral parts of search by meaning: the query a session sends, pending work, and the final merge.

A memory version's vector lives in a ``vectors`` table row keyed by the
memory id, with its agent and level (so PostgreSQL's row-level security and
SQLite's scope filter apply to it exactly as to postings). A row with no
model is *pending*: saved or changed since it was last embedded. Search
never waits for a background job: before it ranks, the session embeds a
bounded few of its own visible pending records (``search.semantic.CATCH_UP``); any left
over are still found by the lexical side (hybrid), and a semantic-mode
search with leftovers is answered as hybrid so nothing visible is missed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..models import Hit, Memory
from ..search import fusion

if TYPE_CHECKING:  # numpy comes with the semantic extra; lexical stores never import it
    import numpy as np


@dataclass(frozen=True, slots=True)
class DenseQuery:
    """The query side of a dense search: whose vectors count, and the quantised query vector."""

    model: str
    dim: int
    codes: np.ndarray  # int8
    scale: float
    floor: float  # cosine below which a record is no dense candidate (unrelated)

    @classmethod
    def make(cls, model: str, vector: np.ndarray, floor: float = 0.0) -> DenseQuery:
        from ..search.dense import quantise

        codes, scale = quantise(vector)
        return cls(model, int(codes.size), codes, scale, float(floor))


@dataclass(frozen=True, slots=True)
class QueryEmbedding:
    """A query vector still being computed, with what is known before it is: its model and dimension.

    Knowing them early lets a backend bring its vectors up to date for that model while the model runs.
    """

    model: str
    dim: int
    future: Future[DenseQuery]


QueryVector = DenseQuery | QueryEmbedding
"""What a backend's dense search receives: the query, or its embedding still running (``semantic``)."""


def resolve(query: QueryVector) -> DenseQuery:
    """The query vector, waiting for it if it is still being embedded.

    Backends call this only after their lexical candidates are ranked, or from a worker thread
    (``when_ready``), so the model runs (in ``semantic``'s worker, outside the GIL) while SQL does; an
    embedding error is raised here.
    """
    return query.future.result() if isinstance(query, QueryEmbedding) else query


def identity(query: QueryVector) -> tuple[str, int]:
    """The query's (model, dimension), known before its vector is."""
    return (query.model, query.dim)


T = TypeVar("T")
K = TypeVar("K")


def when_ready(query: QueryVector, work: Callable[[DenseQuery], T]) -> Future[T]:
    """Run ``work`` on the query vector in a worker thread, as soon as the vector is there.

    The caller's thread goes on (ranking BM25) and collects the result, or the embedding's or the work's
    error, from the returned future. The work runs in the thread that finished the embedding, or in a
    pool thread when the vector was already known (cached): never in the caller's thread, and no pool
    thread ever blocks waiting for another.
    """
    from ..search.threads import pool

    out: Future[T] = Future()

    def run(_: object = None) -> None:
        if not out.set_running_or_notify_cancel():
            return
        try:
            out.set_result(work(resolve(query)))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, who re-raises it; never lost
            out.set_exception(exc)

    if isinstance(query, QueryEmbedding) and not query.future.done():
        query.future.add_done_callback(run)
    else:
        pool().submit(run)
    return out


@dataclass(frozen=True, slots=True)
class Pending:
    """A visible record waiting for its vector: id, the memory's updated time (a stamp), and its text."""

    memory_id: int
    stamp: int
    text: str


# What ``store_vectors`` writes: the pending record, its int8 codes and their scale.
VectorItem = tuple[Pending, "np.ndarray", float]


#: what both SQL backends read of a pending record (rows aliased ``d``): ``Pending``'s fields and the text
PENDING_COLUMNS = "d.id, d.updated_us, d.key, d.content, d.context"


def embed_text(key: str, content: str, context: str | None = None) -> str:
    """What a memory's vector is made from: its context, when it has one, then its content (keys are
    often identifiers, not prose). The query side embeds the query alone."""
    return content if context is None else f"{context}\n{content}"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A ranked record before it is made a ``Memory``: only the rows that make the answer are converted."""

    agent: str
    key: str
    level: int
    score: float
    row: Any  # the backend's memory row (or a Memory already)


def order_candidates(found: Sequence[Candidate], agents: Sequence[str], limit: int) -> list[Candidate]:
    """Best first; ties by key, then by the agent's place (own first), never by row ids."""
    rank = {agent: i for i, agent in enumerate(agents)}
    return sorted(found, key=lambda c: (-c.score, c.key, rank.get(c.agent, len(rank))))[:limit]


def contenders(scores: dict[K, float], limit: int) -> list[K]:
    """The keys that can be among the ``limit`` best: every one scoring at least the ``limit``-th best score.

    Ties at that score are all kept, so the caller's order (by key, then agent) decides between them.
    """
    if len(scores) <= limit:
        return list(scores)
    cut = sorted(scores.values(), reverse=True)[limit - 1]
    return [k for k, score in scores.items() if score >= cut]


def from_hits(hits: Sequence[Hit]) -> list[Candidate]:
    """Candidates that already hold their memory (``combine``'s ``to_memory`` is then ``as_memory``)."""
    return [Candidate(h.memory.agent_id, h.memory.key, h.memory.label_code, h.score, h.memory) for h in hits]


def as_memory(row: Any) -> Memory:
    memory: Memory = row
    return memory


def combine(
    mode: str,
    lexical: Sequence[Candidate],
    dense: Sequence[Candidate],
    agents: Sequence[str],
    limit: int,
    to_memory: Callable[[Any], Memory],
) -> list[Hit]:
    """The answer of a semantic or hybrid search from the two visible-only top lists."""
    if mode == "semantic":
        kept = fusion.semantic_scores([(i, c.score) for i, c in enumerate(dense)])
        clipped = [
            Candidate(c.agent, c.key, c.level, kept[i], c.row) for i, c in enumerate(dense) if i in kept
        ]
        return [Hit(to_memory(c.row), c.score) for c in order_candidates(clipped, agents, limit)]
    # one live version per (agent, key, level)
    by_ident = {(c.agent, c.key, c.level): c for c in (*lexical, *dense)}
    fused = fusion.fuse(
        [((c.agent, c.key, c.level), c.score) for c in lexical],
        [((c.agent, c.key, c.level), c.score) for c in dense],
        fusion.DENSE_WEIGHT,
    )
    ranked = order_candidates(
        [Candidate(*ident, score, by_ident[ident].row) for ident, score in fused.items()], agents, limit
    )
    return [Hit(to_memory(c.row), c.score) for c in ranked]
