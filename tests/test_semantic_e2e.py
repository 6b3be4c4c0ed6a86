"""End to end with the real model (all-MiniLM-L6-v2 int8, offline): search by meaning through the public API."""

from __future__ import annotations

import pytest

import stratamem as sm
from stratamem.embed import semantic_available

pytestmark = pytest.mark.skipif(not semantic_available(), reason="stratamem[semantic] not installed")

MEMORIES = {
    "pet": "Caroline adopted a golden retriever puppy named Biscuit last spring",
    "job": "Melanie started a new position as a nurse at the city hospital",
    "trip": "They spent two weeks hiking in the Swiss Alps in August",
    "food": "Her favourite dish is a spicy Thai green curry",
}


def test_default_store_finds_memories_by_meaning(make_store, monkeypatch, no_network):
    monkeypatch.delenv("STRATAMEM_SEARCH_MODE")
    store = make_store()  # no options: the semantic extra makes it hybrid
    assert store.search_mode == "hybrid"
    s = store.session()
    for key, content in MEMORIES.items():
        s.save(key, content)
    # No word of these questions occurs in the memory that answers them.
    assert s.search("which dog does she own?", max_results=1)[0].memory.key == "pet"
    assert s.search("employment in healthcare", max_results=1)[0].memory.key == "job"
    assert s.search("mountain vacation", max_results=1)[0].memory.key == "trip"
    assert s.search("mountain vacation", mode="lexical") == []
    semantic_hits = s.search("what does she like to eat", mode="semantic")
    assert semantic_hits[0].memory.key == "food"
    assert all(0 < h.score <= 1 for h in semantic_hits)


def test_real_model_scores_agree_across_backends(no_network):
    """The same store content ranks identically on SQLite and (when available) PostgreSQL."""
    import pg_server

    urls = [":memory:"] + ([pg_server.fresh_url()] if pg_server.available() else [])
    answers = []
    for url in urls:
        with sm.open_store(url, search_mode="hybrid", embedder="minilm") as store:
            s = store.session()
            for key, content in MEMORIES.items():
                s.save(key, content)
            answers.append([(h.memory.key, h.score) for h in s.search("a hospital nurse", max_results=4)])
    assert all(a == answers[0] for a in answers)
