"""Hybrid ranking: min-max-normalised weighted fusion of BM25 and dense top lists.

Measured on LoCoMo dev data: 0.3 * dense + 0.7 * BM25, each side min-max
normalised over its own top list (BM25's top 50, the dense top 100: the
deeper dense list keeps multi-hop questions' second and third evidence
turns), beats BM25 alone (and beats reciprocal rank fusion, which was worse
than BM25 here). Both lists hold only candidates the
session may see, so the normalisation's minimum and maximum come from visible
records only; a side with a single candidate (or all equal) normalises to 1.

Scores returned to callers (documented in the README):
- lexical: BM25, >= 0 (unbounded; unchanged);
- semantic: cosine similarity clipped to [0, 1];
- hybrid: the fused score in [0, 1] (1 = best on both sides).
A score of exactly 0.0 means "unscored" elsewhere (recent-memories listing),
so positive similarities are never reported as 0.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)  # whatever identifies a memory: an id, or (agent, key, level)

DENSE_WEIGHT = 0.3
LEXICAL_WEIGHT = 0.7
CANDIDATES = 50  # the BM25 top list
DENSE_CANDIDATES = 100  # the dense top list (deeper than BM25's: see the README, "Fusion")
FLOOR = 1e-9


def min_max(scores: Sequence[tuple[K, float]]) -> dict[K, float]:
    if not scores:
        return {}
    values = [s for _, s in scores]
    low, high = min(values), max(values)
    if high <= low:
        return {mem_id: 1.0 for mem_id, _ in scores}
    span = high - low
    return {mem_id: (s - low) / span for mem_id, s in scores}


def fuse(
    lexical: Sequence[tuple[K, float]],
    dense: Sequence[tuple[K, float]],
    dense_weight: float = DENSE_WEIGHT,
) -> dict[K, float]:
    """Fused score per memory id (ordering and tie-breaking are the caller's: by key, then agent)."""
    lex, den = min_max(lexical), min_max(dense)
    lexical_weight = 1.0 - dense_weight
    fused: dict[K, float] = {}
    for mem_id in {*lex, *den}:
        score = lexical_weight * lex.get(mem_id, 0.0) + dense_weight * den.get(mem_id, 0.0)
        fused[mem_id] = max(score, FLOOR)
    return fused


def semantic_score(cosine: float) -> float:
    """Cosine clipped to (0, 1]."""
    return min(max(cosine, FLOOR), 1.0)
