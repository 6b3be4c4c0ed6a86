"""Vectors per memory version on every backend: saves never embed, searches catch up, models are recorded."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

import stratamem as sm
import stratamem.search.semantic as semantic
from stratamem.embed.hashing import HashEmbedder
from stratamem.errors import ValidationError


class Counting(HashEmbedder):
    """The hash embedder, counting how many texts it was asked to embed."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.documents = 0
        self.queries = 0

    def embed_documents(self, texts):
        self.documents += len(texts)
        return super().embed_documents(texts)

    def embed_query(self, text):
        self.queries += 1
        return HashEmbedder.embed_documents(self, [text])[0]


def keys(hits):
    return [h.memory.key for h in hits]


def test_save_does_not_run_the_model_and_search_catches_up(make_store):
    model = Counting()
    store = make_store(search_mode="hybrid", embedder=model)
    s = store.session()
    for i in range(5):
        s.save(f"k{i}", f"note number {i} about gardening")
    assert model.documents == 0 and model.queries == 0
    assert keys(s.search("gardening", max_results=10))
    assert model.documents == 5 and model.queries == 1
    s.search("gardening")
    assert model.documents == 5  # embedded once
    s.save("k0", "now about sailing")  # an update makes its vector pending again
    s.search("sailing")
    assert model.documents == 6


def test_search_stays_correct_while_vectors_are_pending(make_store, monkeypatch):
    monkeypatch.setattr(semantic, "CATCH_UP", 0)  # nothing is embedded by searches
    store = make_store(search_mode="hybrid", embedder=Counting())
    s = store.session()
    s.save("a", "the blue heron fishes at dawn")
    s.save("b", "tax forms are due in April")
    assert keys(s.search("heron", mode="hybrid")) == ["a"]
    # semantic mode with visible records still pending is answered as hybrid: nothing visible is missed
    assert keys(s.search("heron", mode="semantic")) == ["a"]
    assert store.reindex() == 2
    assert keys(s.search("heron", mode="semantic"))[0] == "a"


def test_modes_per_store_and_per_call(make_store):
    store = make_store(search_mode="lexical", embedder="hash")
    assert store.search_mode == "lexical"
    s = store.session()
    s.save("a", "apples and pears")
    s.save("b", "pears only")
    lexical = s.search("pears")
    hybrid = s.search("pears", mode="hybrid")
    semantic_hits = s.search("pears", mode="semantic")
    assert set(keys(lexical)) == set(keys(hybrid)) == set(keys(semantic_hits)) == {"a", "b"}
    assert all(0 < h.score <= 1 for h in hybrid + semantic_hits)
    with pytest.raises(ValidationError):
        s.search("pears", mode="fuzzy")
    assert keys(s.search("", mode="semantic")) == ["b", "a"]  # empty query: most recent, any mode


def test_semantic_without_an_embedder_is_a_clear_error(make_store):
    with pytest.raises(ValidationError, match="embedder"):
        make_store(search_mode="semantic", embedder=None)
    s = make_store(embedder=None).session()
    assert s.store.search_mode == "lexical"
    s.save("a", "text")
    with pytest.raises(ValidationError, match="embedder"):
        s.search("text", mode="hybrid")


def test_non_english_stores_get_no_english_model_by_default(monkeypatch):
    import stratamem.embed as embed

    monkeypatch.delenv("STRATAMEM_SEARCH_MODE")
    monkeypatch.setattr(embed, "multilingual_available", lambda: False)  # see test_semantic_languages
    store = sm.open_store(":memory:", languages=("spanish",))
    assert store.search_mode == "lexical"


def test_default_mode_is_hybrid_with_the_extra(monkeypatch):
    from stratamem.embed import semantic_available

    monkeypatch.delenv("STRATAMEM_SEARCH_MODE")
    store = sm.open_store(":memory:")
    assert store.search_mode == ("hybrid" if semantic_available() else "lexical")


def test_model_change_re_embeds_never_mixes_dimensions(tmp_path):
    path = str(tmp_path / "m.db")
    first = sm.open_store(path, search_mode="semantic", embedder=HashEmbedder(64))
    s = first.session()
    s.save("a", "river boats and canals")
    s.save("b", "mountain huts")
    assert keys(s.search("canals"))[0] == "a"
    first.close()
    second_model = Counting(32)  # another identity and another dimension
    second = sm.open_store(path, search_mode="semantic", embedder=second_model)
    s2 = second.session()
    assert keys(s2.search("canals"))[0] == "a"
    assert second_model.documents == 2  # re-embedded, not compared with 64-dim vectors
    progress = []
    assert second.reindex(progress=lambda done, total: progress.append((done, total)), force=True) == 2
    assert progress[-1] == (2, 2)
    second.close()


def test_vectors_are_compact_and_purge_removes_them(tmp_path, clock):
    from datetime import timedelta

    path = str(tmp_path / "v.db")
    store = sm.open_store(path, search_mode="hybrid", embedder=HashEmbedder(64), clock=clock)
    s = store.session()
    s.save("a", "secret sauce recipe")
    s.search("sauce")
    conn = sqlite3.connect(path)
    (blob,) = conn.execute("SELECT vec FROM vectors").fetchone()
    assert len(blob) == 64  # int8 codes, one byte per dimension
    s.delete("a")
    assert conn.execute("SELECT vec FROM vectors").fetchone()[0] is None
    store.purge(clock.now + timedelta(seconds=1))
    assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 0
    conn.close()
    store.close()


def test_reindex_is_audited(make_store):
    store = make_store(search_mode="hybrid", embedder="hash")
    store.session().save("a", "x y z")
    store.reindex()
    assert any(e.operation == "reindex" for e in store.audit_events())


def test_dimension_mismatch_from_an_embedder_is_an_error(make_store):
    class Broken(HashEmbedder):
        def embed_documents(self, texts):
            return np.zeros((len(texts), 3), dtype=np.float32)

    store = make_store(search_mode="hybrid", embedder=Broken())
    s = store.session()
    s.save("a", "words")
    with pytest.raises(sm.StorageError, match="dimension"):
        s.search("words")
