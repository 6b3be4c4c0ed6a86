"""Bad input on the semantic path: never a crash, never a silently wrong answer."""

from __future__ import annotations

import logging
import sqlite3

import pytest

import stratamem as sm
import stratamem.embed as embed
from stratamem.embed import EmbedderError
from stratamem.embed.hashing import HashEmbedder

QUERIES = ["", "   ", "*", "🎉🔥", "東京 寿司", "Привет", "NEAR(a b) AND -x*", "\udc80", "x" * 10_000, "\x00"]


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_any_query_is_answered(make_store, mode):
    s = make_store(search_mode=mode, embedder="hash").session()
    s.save("a", "東京で寿司を食べた 🎉")
    s.save("b", "Привет, мир")
    for q in QUERIES:
        hits = s.search(q)
        assert all(0 <= h.score <= 1 for h in hits)
    assert [h.memory.key for h in s.search("")] == ["b", "a"]  # empty: most recent, score 0
    assert [h.memory.key for h in s.search("寿司")][:1] == ["a"]


@pytest.mark.skipif(not embed.semantic_available(), reason="stratamem[semantic] not installed")
def test_any_query_is_answered_by_the_real_model():
    """The model's query path (its own one-thread session) takes lone surrogates, NUL, 10k chars, emoji."""
    store = sm.open_store(":memory:", search_mode="hybrid", embedder="minilm")
    s = store.session()
    s.save("a", "Sushi in Tokyo 🎉")
    for q in QUERIES:
        hits = s.search(q)
        assert all(0 <= h.score <= 1 for h in hits)
        assert len(hits) <= 10
    model = embed.shared_minilm()
    assert model.embed_query("\udc80 sushi").shape == (model.dim,)
    assert [h.memory.key for h in s.search("sushi tokyo", mode="semantic")] == ["a"]


def test_64_kib_content_is_truncated_for_the_vector_and_found_whole_by_words(make_store):
    s = make_store(search_mode="hybrid", embedder="hash").session()
    big = ("lorem ipsum " * 5000)[:60_000] + " zebracorn"
    s.save("big", big)
    assert [h.memory.key for h in s.search("zebracorn")] == ["big"]  # lexical side indexes all of it


@pytest.mark.skipif(not embed.semantic_available(), reason="stratamem[semantic] not installed")
def test_64_kib_content_with_the_real_model(make_store):
    s = make_store(search_mode="semantic", embedder="minilm").session()
    s.save("big", "Our family dog is a golden retriever. " + "filler text " * 5000)
    s.save("other", "Quarterly tax forms are due in April")
    assert s.search("what pet do we have", max_results=1)[0].memory.key == "big"


def test_a_broken_default_model_falls_back_to_lexical_and_says_so(monkeypatch, caplog):
    monkeypatch.delenv("STRATAMEM_SEARCH_MODE")
    monkeypatch.setattr(embed, "semantic_available", lambda: True)

    def broken():
        raise EmbedderError("embedding model file is corrupt (size or SHA-256 differs)")

    monkeypatch.setattr(embed, "shared_minilm", broken)
    store = sm.open_store(":memory:")
    assert store.search_mode == "hybrid"
    s = store.session()
    s.save("a", "apples")
    with caplog.at_level(logging.ERROR, logger="stratamem.semantic"):
        assert [h.memory.key for h in s.search("apples")] == ["a"]
    assert "corrupt" in caplog.text and store.search_mode == "lexical"
    with pytest.raises(EmbedderError):  # asked for explicitly: the error, not a quiet fallback
        s.search("apples", mode="semantic")


def test_a_broken_model_is_an_error_when_the_mode_was_chosen(monkeypatch):
    def broken():
        raise EmbedderError("embedding model file not found")

    monkeypatch.setattr(embed, "shared_minilm", broken)
    store = sm.open_store(":memory:", search_mode="hybrid", embedder="minilm")
    s = store.session()
    s.save("a", "apples")
    with pytest.raises(sm.StorageError, match="not found"):
        s.search("apples")


def test_a_stored_vector_of_the_wrong_size_is_ignored_not_misread(tmp_path, caplog):
    path = str(tmp_path / "d.db")
    store = sm.open_store(path, search_mode="hybrid", embedder=HashEmbedder(64))
    s = store.session()
    s.save("a", "river boats")
    s.save("b", "mountain huts")
    s.search("river")
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE vectors SET vec = x'0102' WHERE memory_id = (SELECT id FROM memories WHERE key = 'b')"
    )
    conn.commit()
    conn.close()
    other = sm.open_store(path, search_mode="hybrid", embedder=HashEmbedder(64))  # a fresh process cache
    with caplog.at_level(logging.ERROR, logger="stratamem.vectors"):
        assert [h.memory.key for h in other.session().search("mountain huts")] == ["b"]  # lexical side
    assert "do not have 64 dimensions" in caplog.text
    assert other.reindex(force=True) == 2
    other.close()
    store.close()
