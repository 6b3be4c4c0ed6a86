"""Exact BM25 top-k with MaxScore pruning, shared by both backends.

The backends differ only in the SQL that scores postings; everything that
decides *what* is scored — term weights from visible document frequencies,
which terms select candidates, whether a pruned answer can be trusted, and
how ties at the cut are widened — lives here, so SQLite and PostgreSQL take
the same decisions and return the same keys and scores for the same store.

Backends look these functions up through this module (``pruning.essential_terms``),
so a test that patches one name here forces a split on every backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from ...search import ranking

Id = TypeVar("Id")
# run(essential, window, floor): the fixed-point score sums (id, score) of the
# documents holding any of the first ``essential`` terms of the order (all of
# them: exhaustive), each scored over every query term; either the best
# ``window`` by score (floor None) or every one scoring at least ``floor``.
Runner = Callable[[int, "int | None", "int | None"], Sequence[tuple[Id, int]]]


def score_bound(weight: float) -> int:
    """An upper bound, in fixed-point units, of one term's BM25 contribution to any document."""
    return math.ceil(weight * (ranking.K1 + 1.0) * ranking.SCORE_SCALE) + 1


def essential_terms(doc_freqs: Sequence[int], weights: Sequence[float]) -> int:
    """How many of the rarest terms (arguments are rarest first) should select candidates.

    Each candidate costs one index probe per query term, several times a
    scanned posting, so pruning is worth an attempt only when the rare terms
    hold under a third of 1/q of all postings — and only if the left-out
    terms' score bounds add up to less than one occurrence of the rarest term
    is worth (a rough guess at the k-th score, so the attempt is likely to
    hold). Returns ``len(doc_freqs)`` for no pruning.
    """
    total, left_out = sum(doc_freqs), 0
    worth = total - total / (3 * len(doc_freqs))
    for essential in range(len(doc_freqs) - 1, 0, -1):
        left_out += doc_freqs[essential]
        if left_out >= worth:
            bound = sum(score_bound(w) for w in weights[essential:])
            return essential if bound < weights[0] * ranking.SCORE_SCALE else len(doc_freqs)
    return len(doc_freqs)


def weigh(
    n_docs: int, doc_freqs: Mapping[str, int], query_weights: Mapping[str, float] | None = None
) -> tuple[dict[str, float], list[str]]:
    """Weights of the terms some visible document holds — idf times the term's weight in the query
    (``query_weights``; 1 when None) —, and those terms heaviest first (ties by term)."""
    weights = {
        t: ranking.idf(n_docs, df) * (1.0 if query_weights is None else query_weights.get(t, 1.0))
        for t, df in doc_freqs.items()
        if df > 0
    }
    return weights, sorted(weights, key=lambda t: (-weights[t], t))


def top_scores(
    order: Sequence[str],
    doc_freqs: Mapping[str, int],
    weights: Mapping[str, float],
    limit: int,
    run: Runner[Id],
) -> list[tuple[Id, int]]:
    """The exact top ``limit`` (plus every row tied with last place, plus up to the tie slack).

    When the most common terms carry most of the postings they are first left
    out of candidate selection (MaxScore): documents holding a rarer term are
    scored in full, and if the score bounds of the left-out terms together
    stay below the k-th score found, no other document could enter the top k.
    Otherwise every posting is scored. Either way the answer equals
    exhaustive scoring.
    """
    window = limit + ranking.TIE_SLACK
    chosen, ranked = len(order), None
    essential = essential_terms([doc_freqs[t] for t in order], [weights[t] for t in order])
    if essential < len(order):
        ranked = list(run(essential, window, None))
        bound = sum(score_bound(weights[t]) for t in order[essential:])
        if len(ranked) >= limit and bound < ranked[limit - 1][1]:
            chosen = essential
        else:
            ranked = None
    if ranked is None:
        ranked = list(run(len(order), window, None))
    if len(ranked) == window and ranked[-1][1] == ranked[limit - 1][1]:
        # Ties run past the slack: take every row tied with the last place.
        ranked = list(run(chosen, None, ranked[limit - 1][1]))
    return ranked
