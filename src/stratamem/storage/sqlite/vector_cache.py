"""A process's in-memory matrix of one model's vectors on SQLite (numpy; see ``sqlite_vectors``).

Rows hold the int8 codes (``dim`` bytes a row; converted to float32 a block at a time for exact dot
products, ``search.dense``) and their sign bits
(the first pass over large views, ``search.dense.prefilter``), with agent, level and scale. The
cache is only a copy: ``sync`` brings it up to date from the ``vectors`` table inside the search's
own read transaction (rows whose ``seq`` is newer, or everything after an epoch change), so what
another process wrote, deleted or purged is seen by the next search here.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...labels import LEVEL_BITS, visible_params
from ...search import dense
from ...search.dense import cosine, hamming, nearest_threshold, sign_bits
from ..vectors import DenseQuery

log = logging.getLogger("stratamem.vectors")
BLOCK = 2048  # rows converted to float32 at once (3 MB at 384 dimensions)


def _row_dots(block: np.ndarray, q: np.ndarray) -> np.ndarray:
    vecdot = getattr(np, "vecdot", None)  # numpy >= 2.0
    if vecdot is not None:
        dots: np.ndarray = vecdot(block, q)
        return dots
    fallback: np.ndarray = np.einsum("ij,j->i", block, q)
    return fallback


class VectorCache:
    """This process's copy of one model's vectors, as a matrix (see the module docstring)."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.epoch: str | None = None
        self.last_seq = 0
        self.version = 0  # bumped whenever a row changes: a view's mask is kept until then
        self._view: tuple[tuple[object, ...], np.ndarray, np.ndarray, int] | None = None
        self._reset(0)

    def _reset(self, dim: int) -> None:
        self.version += 1
        self.dim = dim
        self.n = 0
        self.row_of: dict[int, int] = {}
        self.agent_code: dict[str, int] = {}
        self.ids = np.zeros(0, dtype=np.int64)
        self.agents = np.zeros(0, dtype=np.int32)
        self.levels = np.zeros(0, dtype=np.int64)  # labels as stored (``stratamem.labels``)
        self.valid = np.zeros(0, dtype=bool)
        self.scales = np.zeros(0, dtype=np.float64)
        self.mat = np.zeros((0, dim), dtype=np.int8)
        # Sign bits column by column ((words, rows)): see search.dense.hamming.
        self.bits = np.ascontiguousarray(sign_bits(np.zeros((0, dim), dtype=np.int8)).T)

    def _grow(self, need: int) -> None:
        if need <= len(self.ids):
            return
        cap = max(need, 2 * len(self.ids), 1024)
        for name in ("ids", "agents", "levels", "valid", "scales"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)
        mat = np.zeros((cap, self.dim), dtype=np.int8)
        mat[: self.n] = self.mat[: self.n]
        self.mat = mat
        bits = np.zeros((self.bits.shape[0], cap), dtype=np.uint64)
        bits[:, : self.n] = self.bits[:, : self.n]
        self.bits = bits

    def sync(self, conn: sqlite3.Connection, model: str, dim: int) -> int | None:
        """Bring the cache up to the caller's transaction; its ``version`` if it now holds exactly that.

        None when another reader, in a newer transaction, has already brought it further: rows the
        caller's snapshot does not have may then be in it (``sqlite_vectors.search`` checks its answer's
        rows against the snapshot then).
        """
        epoch_row = conn.execute("SELECT value FROM meta WHERE name = 'vectors_epoch'").fetchone()
        epoch = epoch_row[0] if epoch_row else None
        if epoch != self.epoch or model != self.model or dim != self.dim:
            self._reset(dim)
            self.model, self.epoch, self.last_seq = model, epoch, 0
        rows = conn.execute(
            "SELECT memory_id, agent_id, level, live, seq, model, scale, vec FROM vectors "
            "WHERE seq > ? ORDER BY seq",
            (self.last_seq,),
        ).fetchall()
        if rows:
            self._apply(rows, model, dim)
        newest = conn.execute("SELECT coalesce(max(seq), 0) FROM vectors").fetchone()[0]
        return self.version if newest == self.last_seq else None

    def _apply(self, rows: list[Any], model: str, dim: int) -> None:
        self.version += 1
        self._grow(self.n + len(rows))
        bad = 0
        touched = np.zeros(len(rows), dtype=np.int64)
        for i, (mem_id, agent, level, live, seq, row_model, scale, vec) in enumerate(rows):
            row = self.row_of.get(mem_id)
            if row is None:
                row = self.row_of[mem_id] = self.n
                self.n += 1
            code = self.agent_code.setdefault(agent, len(self.agent_code))
            ok = bool(live) and row_model == model and vec is not None and len(vec) == dim
            if live and row_model == model and not ok:
                bad += 1
            self.ids[row], self.agents[row], self.levels[row], self.valid[row] = mem_id, code, level, ok
            self.scales[row] = scale if ok else 0.0
            self.mat[row] = np.frombuffer(vec, dtype=np.int8) if ok else 0
            self.last_seq = max(self.last_seq, seq)
            touched[i] = row
        self.bits[:, touched] = sign_bits(self.mat[touched]).T
        if bad:
            log.error(
                "%d stored vectors do not have %d dimensions; they are ignored (run `stratamem reindex --force`)",
                bad,
                dim,
            )

    def _dots(self, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Exact dot products of the given rows with q, converting int8 codes to float32 a block at a time.

        Reading int8 (a quarter of float32's bytes) into a cache-sized block is about twice as fast as
        streaming a float32 matrix, and takes a quarter of the memory. Row by row (``vecdot``: one BLAS
        dot per row, 0.05 ms for 2,000 rows; ``einsum`` before numpy 2), not one BLAS matrix product:
        no thread pool (OpenBLAS threads contending on a busy 2-core machine made a 10k-row product 30x
        slower); the integer sums are exact either way.
        """
        whole = rows.size > self.n // 4  # most rows wanted: scan slices (no gather), then pick
        count = self.n if whole else rows.size
        dots = np.empty(count, dtype=np.float32)
        for start in range(0, count, BLOCK):
            stop = min(start + BLOCK, count)
            part = self.mat[start:stop] if whole else self.mat[rows[start:stop]]
            dots[start:stop] = _row_dots(part.astype(np.float32), q)
        return dots[rows] if whole else dots

    def view(
        self, agents: Sequence[str], taint: int, hidden: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """The session's visible rows: (mask, its complement, count), kept until the next change of the cache.

        A search asks for it in its own thread before it ranks BM25, so the dense pass that runs once the
        query vector exists (``top``) finds it made. A function of the view only (agents, level, live,
        this model, not hidden), like everything ``top`` does.
        """
        key = (tuple(agents), int(taint), tuple(hidden), self.version)
        if self._view is not None and self._view[0] == key:
            return self._view[1], self._view[2], self._view[3]
        n = self.n
        allowed = np.zeros(len(self.agent_code), dtype=bool)
        allowed[[self.agent_code[a] for a in agents if a in self.agent_code]] = True
        levels = self.levels[:n]
        params = visible_params(taint)
        mask = (
            self.valid[:n]
            & allowed[self.agents[:n]]
            & (levels <= params["top"])
            & ((levels & params["deny"]) == 0)
            & ((levels & LEVEL_BITS) <= params["lvl"])
        )
        for mem_id in hidden:
            row = self.row_of.get(mem_id)
            if row is not None:
                mask[row] = False
        unseen = ~mask
        mask.setflags(write=False)
        unseen.setflags(write=False)
        self._view = (key, mask, unseen, int(np.count_nonzero(mask)))
        return self._view[1], self._view[2], self._view[3]

    def top(
        self, agents: Sequence[str], taint: int, hidden: Sequence[int], query: DenseQuery, k: int
    ) -> list[tuple[int, float]]:
        """The k best visible (id, cosine) pairs, plus any tied with the k-th (the caller breaks ties by key)."""
        n = self.n
        mask, unseen, visible = self.view(agents, taint, hidden)
        if visible == 0:
            return []
        keep = dense.kept(visible)
        if visible > dense.PREFILTER_ABOVE and visible > keep:
            # First pass by sign bits. Rows outside the view get a distance above any real one, so the
            # threshold is the keep-th smallest *visible* distance (ties all kept): see search.dense.
            distances = hamming(self.bits[:, :n], sign_bits(query.codes)[0])
            if visible < n:
                np.putmask(distances, unseen, dense.UNSEEN)
            mask = distances <= nearest_threshold(distances, keep)
        rows = np.flatnonzero(mask)
        dots = self._dots(rows, query.codes.astype(np.float32))
        scores = cosine(dots, self.scales[rows], query.scale)
        related = scores >= query.floor
        rows, scores = rows[related], scores[related]
        if rows.size > k:
            kth = np.partition(scores, rows.size - k)[rows.size - k]
            keep = scores >= kth
            rows, scores = rows[keep], scores[keep]
        return [(int(self.ids[r]), float(s)) for r, s in zip(rows, scores, strict=True)]
