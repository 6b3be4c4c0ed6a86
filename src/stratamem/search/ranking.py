"""BM25 parameters and the one place its formula is written down.

Backends evaluate the formula inside the database (so candidates never cross
into Python), but they build it from these pieces so every backend ranks alike.
The statistics it uses (document count, average length, document frequency)
must be computed over the searching session's visible view only: that is what
keeps scores free of anything the session may not see.
"""

from __future__ import annotations

import math

K1 = 1.2
# Length normalisation. 0.75 is the classic value, tuned on long news articles;
# memories are short (a sentence to a paragraph) and a longer one usually holds
# more of the facts asked about, not padding, so full normalisation buries it.
# 0.3 (lighter normalisation, as for short texts such as microblogs) raised
# LoCoMo dev recall@10 from 0.625 to 0.654 lexical and 0.673 to 0.707 hybrid
# (multi-hop 0.357 to 0.404) and left SciFact abstracts unchanged (BM25
# nDCG@10 0.703 vs 0.702). Any value in 0.1-0.3 measured within 0.005.
B = 0.3
# Scores are summed as integers in units of 1e-9, so a sum does not depend on row order.
SCORE_SCALE = 1_000_000_000
# Extra ranked rows fetched so ties at the cut can be ordered by key, never by row id.
TIE_SLACK = 16


def idf(n_docs: int, doc_freq: int) -> float:
    """Lucene's always-positive BM25 idf."""
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def term_score(weight: float, tf: int, length: int, avgdl: float) -> float:
    """Reference form of the per-term BM25 contribution (the SQL mirrors it)."""
    if tf <= 0:
        return 0.0
    return weight * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / avgdl))
