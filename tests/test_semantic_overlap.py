"""The dense side ranks in a worker while BM25 ranks in the caller's thread, and the answers do not change.

- ``when_ready`` runs its work off the caller's thread, as soon as the vector is there (or at once when
  it was already known), and hands back the embedding's or the work's error.
- A hybrid search ranks its lexical side while the query is still embedding: an embedder that waits
  until BM25 has ranked would stall forever if the two ran one after the other.
- Only the answer's rows are made ``Memory``s; the answers equal those of a search made with the vector
  already known (a second search in the same session uses the cached vector).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future

import numpy as np
import pytest

import stratamem as sm
from stratamem.embed import EmbedderError
from stratamem.embed.hashing import HashEmbedder
from stratamem.storage.sqlite import backend as sqlite_backend
from stratamem.storage.sqlite import rank
from stratamem.storage.vectors import DenseQuery, QueryEmbedding, when_ready

QUERY = DenseQuery.make("m", np.ones(8, dtype=np.float32))


def test_work_on_a_known_vector_runs_off_the_callers_thread():
    seen: list[str] = []
    result = when_ready(QUERY, lambda q: seen.append(threading.current_thread().name) or q.dim)
    assert result.result(timeout=10) == 8
    assert seen and seen[0] != threading.current_thread().name


def test_work_waits_for_the_vector_and_runs_where_it_was_made():
    future: Future[DenseQuery] = Future()
    result = when_ready(QueryEmbedding("m", 8, future), lambda q: (q.model, threading.current_thread().name))
    assert not result.done()  # nothing runs before the vector is there
    finisher = threading.Thread(target=lambda: future.set_result(QUERY), name="embedding-worker")
    finisher.start()
    finisher.join()
    assert result.result(timeout=10) == ("m", "embedding-worker")


def test_errors_of_the_embedding_and_of_the_work_reach_the_caller():
    future: Future[DenseQuery] = Future()
    result = when_ready(QueryEmbedding("m", 8, future), lambda q: q.dim)
    future.set_exception(EmbedderError("the embedding model failed: test"))
    with pytest.raises(EmbedderError, match="failed"):
        result.result(timeout=10)
    with pytest.raises(ZeroDivisionError):
        when_ready(QUERY, lambda q: 1 // 0).result(timeout=10)


class WaitsForBM25(HashEmbedder):
    """Embeds a query only once BM25 has ranked (or gives up after a while and says so)."""

    def __init__(self) -> None:
        super().__init__(64)
        self.lexical_done = threading.Event()
        self.waited_in_vain = False

    def embed_query(self, text: str) -> np.ndarray:
        if not self.lexical_done.wait(timeout=20):
            self.waited_in_vain = True
        return super().embed_query(text)


@pytest.mark.parametrize("where", [":memory:", "file"])
def test_bm25_ranks_while_the_query_is_embedding(monkeypatch, tmp_path, where):
    embedder = WaitsForBM25()
    ranked_rows = rank.ranked_rows

    def spy(*args, **kwargs):
        rows = ranked_rows(*args, **kwargs)
        embedder.lexical_done.set()
        return rows

    monkeypatch.setattr(rank, "ranked_rows", spy)
    path = ":memory:" if where == ":memory:" else str(tmp_path / "o.db")
    store = sm.open_store(path, search_mode="hybrid", embedder=embedder)
    s = store.session("a")
    for i, text in enumerate(["river boats at dawn", "green tea leaves", "boats on the green river"]):
        s.save(f"k{i}", text)
    store.reindex()
    embedder.lexical_done.clear()
    first = s.search("green boats")
    assert not embedder.waited_in_vain
    assert s.search("green boats") == first  # the vector now cached: same answer, same scores
    assert {h.memory.key for h in first} == {"k0", "k1", "k2"}
    assert all(isinstance(h.memory, sm.Memory) for h in first)


class RecordsOverlap(HashEmbedder):
    """Notes whether documents were ever embedded while a query was still embedding."""

    def __init__(self) -> None:
        super().__init__(64)
        self.query_running = threading.Event()
        self.query_started = threading.Event()
        self.query_thread: threading.Thread | None = None
        self.overlapped = False

    def embed_query(self, text: str) -> np.ndarray:
        self.query_thread = threading.current_thread()
        self.query_running.set()
        self.query_started.set()
        try:
            threading.Event().wait(0.2)  # long enough for the pending check to find the new records
            return super().embed_query(text)
        finally:
            self.query_running.clear()

    def embed_documents(self, texts):
        # HashEmbedder's embed_query embeds its text as a document, in the query's own thread
        if self.query_running.is_set() and threading.current_thread() is not self.query_thread:
            self.overlapped = True
        return super().embed_documents(texts)


def test_the_query_embeds_while_pending_records_are_looked_up_never_beside_their_embedding(monkeypatch):
    """The query's embedding starts before the check for pending records (that check is off its path);
    records found pending are embedded only after the query's embedding is over."""
    embedder = RecordsOverlap()
    store = sm.open_store(":memory:", search_mode="hybrid", embedder=embedder)
    s = store.session("a")
    s.save("k0", "river boats at dawn")
    store.reindex()
    s.save("k1", "boats on the green river")  # pending: the next search embeds it
    pending_vectors = sqlite_backend.SQLiteBackend.pending_vectors
    order: list[str] = []

    def spy(self, *args, **kwargs):
        order.append("query started" if embedder.query_started.wait(timeout=10) else "query not started")
        return pending_vectors(self, *args, **kwargs)

    monkeypatch.setattr(sqlite_backend.SQLiteBackend, "pending_vectors", spy)
    hits = s.search("green boats")
    assert order == ["query started"]
    assert not embedder.overlapped
    assert {h.memory.key for h in hits} == {"k0", "k1"}
    assert store.backend.vectors.pending_vectors(s.id, 10, store.now()) == []  # caught up by that search
