"""Exact, order-independent dense scores.

Vectors are stored as int8 with one scale per vector (``v ≈ q * scale``, the
largest component mapped to ±127), so a memory's vector takes ``dim`` bytes.
Scoring multiplies int8 codes held as float32: every product is an integer of
at most 127² and a sum over up to 1024 dimensions stays below 2²⁴, so float32
arithmetic is *exact* whatever order BLAS (or pgvector) sums in. The score
``dot * doc_scale * query_scale`` is then two float64 multiplications. A
memory's score is therefore a function of its own vector and the query only —
bit-identical across runs, batch sizes, which other rows are in the matrix,
and between SQLite (numpy) and PostgreSQL (pgvector) — which is what lets the
noninterference property hold for semantic and hybrid search.
"""

from __future__ import annotations

import numpy as np

from ..errors import ValidationError

MAX_DIM = 1024  # 1024 * 127 * 127 < 2**24: sums stay exact in float32


def quantise(vector: np.ndarray) -> tuple[np.ndarray, float]:
    """int8 codes and the scale that maps them back (a zero vector gets scale 0)."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if v.size > MAX_DIM:
        raise ValidationError(f"embedding dimension {v.size} exceeds {MAX_DIM}")
    peak = float(np.max(np.abs(v))) if v.size else 0.0
    if not np.isfinite(peak) or peak == 0.0:
        return np.zeros(v.size, dtype=np.int8), 0.0
    scale = peak / 127.0
    return np.clip(np.rint(v / scale), -127, 127).astype(np.int8), scale


def to_blob(codes: np.ndarray) -> bytes:
    return np.asarray(codes, dtype=np.int8).tobytes()


def from_blob(blob: bytes, dim: int) -> np.ndarray | None:
    """int8 codes, or None when the blob does not hold ``dim`` of them (a different model)."""
    if blob is None or len(blob) != dim:
        return None
    return np.frombuffer(blob, dtype=np.int8)


def cosine(dots: np.ndarray, scales: np.ndarray, query_scale: float) -> np.ndarray:
    """Scores from exact integer dot products: float64, elementwise, in a fixed order."""
    return (np.asarray(dots, dtype=np.float64) * np.asarray(scales, dtype=np.float64)) * float(query_scale)


def score_one(dot: float, scale: float, query_scale: float) -> float:
    """The same arithmetic as ``cosine`` for one row (PostgreSQL returns the dots one by one)."""
    return (float(dot) * float(scale)) * float(query_scale)
