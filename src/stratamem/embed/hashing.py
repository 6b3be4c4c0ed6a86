"""A deterministic embedder for tests: hashed stemmed words, no model.

Two texts sharing words get a positive cosine; the vectors depend on nothing
but the text, so property tests can compare stores bit for bit without
loading a real model. Not for production use: it knows no meaning.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ..text import Analyzer
from .protocol import normalise


class HashEmbedder:
    multilingual = True
    max_tokens = 10_000
    min_similarity = 0.01

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.identity = f"hash-test/{dim}"
        self._analyzer = Analyzer(("english",))

    def _vector(self, text: str) -> np.ndarray:
        out = np.zeros(self.dim, dtype=np.float32)
        terms, _ = self._analyzer.document_terms("", text, ())
        for term, tf in terms.items():
            digest = hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            out[bucket] += (1.0 if digest[4] & 1 else -1.0) * float(tf)
        return out

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed_documents([text])[0]
        return row
