"""Only hits with relevance, in every mode and on every surface (issue 27, item 2).

Min-max fusion gave the weakest candidate of both top lists a score of exactly 0 (shown as 1e-09),
whatever it held: of two memories holding the only query word, one came back "without relevance".
Each side is now a share of its best, so 0 means no evidence at all, and such a candidate is no hit.
"""

from __future__ import annotations

import json

import pytest

from stratamem import tools
from stratamem.embed.hashing import HashEmbedder
from stratamem.search import fusion

MEMORIES = [
    ("car", "Melanie drives a red Tesla"),
    ("stock", "Tesla shares fell nine percent on Tuesday after the earnings call"),
    ("job", "Melanie works as a nurse"),
    ("pet", "Caroline adopted a golden retriever puppy"),
]


@pytest.fixture
def hybrid(make_store):
    session = make_store(search_mode="hybrid", embedder=HashEmbedder()).session("main")
    for key, content in MEMORIES:
        session.save(key, content)
    return session


def test_every_memory_holding_the_query_word_is_a_relevant_hit(hybrid):
    hits = {h.memory.key: h.score for h in hybrid.search("Tesla")}
    assert {"car", "stock"} <= hits.keys()
    assert hits["car"] > 0.3 and hits["stock"] > 0.3  # min-max gave the weaker one 1e-09


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "lexical"])
@pytest.mark.parametrize("query", ["Tesla", "which dog does she own?", "Melanie nurse", "earnings"])
def test_scores_stay_in_their_documented_ranges(hybrid, mode, query):
    for hit in hybrid.search(query, mode=mode):
        assert hit.score > 1e-6, (hit.memory.key, hit.score)
        if mode != "lexical":
            assert hit.score <= 1.0


def test_tool_answers_carry_no_zero_scores(hybrid):
    for query in ("Tesla", "Melanie"):
        results = json.loads(tools.execute(hybrid, "memory_search", {"query": query}))["results"]
        assert results and all(r["score"] >= 0.01 for r in results), results


def test_fusion_drops_candidates_with_no_evidence():
    fused = fusion.fuse([("a", 4.0), ("b", 1.0), ("z", 0.0)], [("a", 0.5), ("c", 0.25), ("y", 0.0)])
    assert set(fused) == {"a", "b", "c"}  # "z" and "y" have no relevance on either side
    assert fused["a"] == pytest.approx(1.0)
    assert fused["b"] == pytest.approx(0.7 * (1 / 4) ** 2)  # the weakest lexical match keeps a score
    assert fused["c"] == pytest.approx(0.3 * (0.25 / 0.5) ** 2)  # a match by meaning alone: at most 0.3
    assert fusion.fuse([], []) == {} and fusion.fuse([("z", 0.0)], [("y", -0.2)]) == {}


def test_semantic_scores_drop_no_similarity_and_clip():
    assert fusion.semantic_scores([("a", 1.0000001), ("b", 0.4), ("c", 0.0), ("d", -0.3)]) == {
        "a": 1.0,
        "b": 0.4,
    }
