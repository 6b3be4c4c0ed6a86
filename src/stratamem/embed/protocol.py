"""What an embedder is (``Embedder``), the error it raises, and the row normalisation every embedder applies.

Apart from the package's ``__init__`` (which picks and loads an embedder) so the
embedders themselves build on this module without importing the package that
imports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..errors import StorageError

if TYPE_CHECKING:
    import numpy as np


class EmbedderError(StorageError):
    """The embedding model is missing, corrupt or failed; the message says which and what to do."""


class Embedder(Protocol):
    identity: str
    dim: int
    multilingual: bool
    max_tokens: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32, L2-normalised."""
        ...


def normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; an all-zero row stays zero (it matches nothing)."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    unit: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit
