"""Query expansion from the top hits (RM3): the question plus the words its best answers share.

A short question ("what do Melanie's kids like?") often shares no word with the memory that answers it
("the children love dinosaurs"), while the best hits for it do. RM3 takes the first search's top
``FEEDBACK_HITS``, estimates a relevance model from them — each hit's terms in proportion to their share
of its length, weighted by the hit's share of the feedback's total score —, and adds its
``EXPANSION_TERMS`` heaviest terms that are not already in the question, together weighing
``1 - ORIGINAL_SHARE`` of the new query. Pure: the session runs the two searches (``session.search``).

The hits are the session's own visible top list, so the expansion terms, their weights and the second
search's order are functions of what the session may see (the noninterference property tests cover
``expand=True``). Measured on LoCoMo dev and SciFact in ``bench/bench_locomo.py`` (docs/search-relevance.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

FEEDBACK_HITS = 5
EXPANSION_TERMS = 10
ORIGINAL_SHARE = (
    0.5  # the question's own terms keep this share of the expanded query's weight (RM3's usual 50/50)
)


def expanded_weights(
    terms: Sequence[str], feedback: Sequence[tuple[Counter[str], float]]
) -> dict[str, float]:
    """The expanded query: each question term at weight 1, expansion terms sharing the rest.

    ``feedback``: each top hit's term counts and score, best first. Returns the question's terms alone
    (weight 1) when the hits hold nothing new. Ties between candidate terms are broken by the term, so
    the same hits always give the same query.
    """
    question = list(dict.fromkeys(terms))
    weights = dict.fromkeys(question, 1.0)
    hits = [(counts, score) for counts, score in feedback[:FEEDBACK_HITS] if score > 0.0 and counts]
    total = sum(score for _, score in hits)
    if not question or total <= 0.0:
        return weights
    model: dict[str, float] = {}
    for counts, score in hits:
        length = sum(counts.values())
        for term, count in counts.items():
            if term not in weights:
                model[term] = model.get(term, 0.0) + (score / total) * count / length
    chosen = sorted(model.items(), key=lambda item: (-item[1], item[0]))[:EXPANSION_TERMS]
    mass = sum(p for _, p in chosen)
    if mass <= 0.0:
        return weights
    # The question's terms together weigh len(question); the expansion's share is scaled to match.
    share = len(question) * (1.0 - ORIGINAL_SHARE) / ORIGINAL_SHARE
    for term, p in chosen:
        weight = share * p / mass
        if weight > 0.0:  # a hit scored next to nothing adds nothing (and no zero-weight term)
            weights[term] = weight
    return weights
