"""Backend-neutral parts of search by meaning: the query a session sends, pending work, and the final merge.

A memory version's vector lives in a ``vectors`` table row keyed by the
memory id, with its agent and level (so PostgreSQL's row-level security and
SQLite's scope filter apply to it exactly as to postings). A row with no
model is *pending*: saved or changed since it was last embedded. Search
never waits for a background job: before it ranks, the session embeds a
bounded batch of its own visible pending records (``CATCH_UP``); any left
over are still found by the lexical side (hybrid), and a semantic-mode
search with leftovers is answered as hybrid so nothing visible is missed.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..models import Hit, Memory
from ..search import fusion

if TYPE_CHECKING:  # numpy comes with the semantic extra; lexical stores never import it
    import numpy as np

CATCH_UP = 256  # pending visible records a search embeds before ranking


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


QueryVector = DenseQuery | Future[DenseQuery]
"""What a backend's dense search receives: the query, or its embedding still running (``semantic``)."""


def resolve(query: QueryVector) -> DenseQuery:
    """The query vector, waiting for it if it is still being embedded.

    Backends call this only after their lexical candidates are ranked, so the model runs (in
    ``semantic``'s worker thread, outside the GIL) while SQL does; an embedding error is raised here.
    """
    return query.result() if isinstance(query, Future) else query


@dataclass(frozen=True, slots=True)
class Pending:
    """A visible record waiting for its vector: id, the memory's updated time (a stamp), and its text."""

    memory_id: int
    stamp: int
    text: str


# What ``store_vectors`` writes: the pending record, its int8 codes and their scale.
VectorItem = tuple[Pending, "np.ndarray", float]


def embed_text(key: str, content: str) -> str:
    """What a memory's vector is made from: its content (keys are often identifiers, not prose)."""
    return content


def order_hits(hits: Sequence[Hit], agents: Sequence[str], limit: int) -> list[Hit]:
    """Best first; ties by key, then by the agent's place (own first), never by row ids."""
    rank = {agent: i for i, agent in enumerate(agents)}
    return sorted(hits, key=lambda h: (-h.score, h.memory.key, rank.get(h.memory.agent_id, len(rank))))[
        :limit
    ]


def combine(
    mode: str, lexical: Sequence[Hit], dense: Sequence[Hit], agents: Sequence[str], limit: int
) -> list[Hit]:
    """The answer of a semantic or hybrid search from the two visible-only top lists."""
    if mode == "semantic":
        return order_hits([Hit(h.memory, fusion.semantic_score(h.score)) for h in dense], agents, limit)

    def ident(m: Memory) -> tuple[str, str, int]:  # one live version per triple
        return (m.agent_id, m.key, int(m.level))

    memories = {ident(h.memory): h.memory for h in (*lexical, *dense)}
    fused = fusion.fuse(
        [(ident(h.memory), h.score) for h in lexical],
        [(ident(h.memory), h.score) for h in dense],
        fusion.DENSE_WEIGHT,
    )
    return order_hits([Hit(memories[k], s) for k, s in fused.items()], agents, limit)
