"""Hybrid ranking: weighted fusion of BM25 and dense top lists, each side as a share of its best.

Each side's score is taken as a share of the best candidate on that side,
squared: BM25 / best BM25 (0 = no query term matched) and cosine / best
cosine (0 = no similarity), then 0.7 * lexical + 0.3 * dense. The zero of
each side is therefore "no relevance", never "the weakest candidate": a
memory holding the only query word keeps a score above zero however weak it
is, and a candidate with no evidence on either side scores exactly 0 and is
dropped (CONTRACT §5: in every mode a hit has a relevance above zero).
Squaring spreads the top of each list as min-max normalisation did, so the
ranking measures alike on LoCoMo dev (``bench/bench_relevance.py``: evidence
recall@5 0.582 against 0.575, recall@10 0.700 against 0.709, nDCG@10 0.538
against 0.541, MRR@10 0.503 against 0.506), while min-max gave the weakest
candidate of both lists exactly 0 whatever it held — e.g. one of two memories
that both contain the single query word.

The lists are BM25's top 50 and the dense top 100 (the deeper dense list keeps
multi-hop questions' second and third evidence turns). Both hold only
candidates the session may see, so each side's best comes from visible
records only, and whether a hit is dropped depends on its own scores alone.

Scores returned to callers (documented in the README and docs/search-relevance.md):
- lexical: BM25, > 0 (unbounded); an empty query's recent-memory listing is unscored (0.0);
- semantic: cosine similarity, in (0, 1] (a record at or below 0 is no hit);
- hybrid: the fused score, in (0, 1] (1 = best on both sides; at most 0.3 for a match by meaning alone).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)  # whatever identifies a memory: an id, or (agent, key, level)

DENSE_WEIGHT = 0.3
LEXICAL_WEIGHT = 0.7
CANDIDATES = 50  # the BM25 top list
DENSE_CANDIDATES = 100  # the dense top list (deeper than BM25's: see the README, "Fusion")
SPREAD = 2  # each side's share of its best is raised to this power (see the module docstring)


def shares(scores: Sequence[tuple[K, float]]) -> dict[K, float]:
    """Each candidate's score as a share of the best one's, squared; 0 where it has none (score <= 0)."""
    best = max((s for _, s in scores), default=0.0)
    if best <= 0.0:
        return {}
    return {mem_id: (s / best) ** SPREAD for mem_id, s in scores if s > 0.0}


def fuse(
    lexical: Sequence[tuple[K, float]],
    dense: Sequence[tuple[K, float]],
    dense_weight: float = DENSE_WEIGHT,
) -> dict[K, float]:
    """Fused score per memory id, only for those with some relevance (ordering and ties are the caller's)."""
    lex, den = shares(lexical), shares(dense)
    lexical_weight = 1.0 - dense_weight
    fused: dict[K, float] = {}
    for mem_id in {*lex, *den}:
        score = lexical_weight * lex.get(mem_id, 0.0) + dense_weight * den.get(mem_id, 0.0)
        if score > 0.0:
            fused[mem_id] = score
    return fused


def semantic_scores(dense: Sequence[tuple[K, float]]) -> dict[K, float]:
    """A semantic search's scores: cosine clipped to 1, a record with no similarity (<= 0) left out."""
    return {mem_id: min(cosine, 1.0) for mem_id, cosine in dense if cosine > 0.0}
