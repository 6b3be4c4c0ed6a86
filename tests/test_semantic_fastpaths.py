"""The latency paths of search by meaning keep its answers: sign-bit prefilter, query cache, worker thread.

- The sign-bit first pass (``search.dense``) takes its cut-off over the
  session's visible vectors only: with it forced on at any size, two stores
  that differ only by invisible records answer bit-identically, and a cache
  holding extra invisible rows ranks exactly like one holding only the
  visible ones.
- Query vectors are cached per (session, embedder, text): a repeated search
  does not run the model again, another session's search does.
- The query is embedded in a worker thread while the lexical side runs; an
  embedding error there is handled like one raised before the search.
- The in-memory matrix follows changes made through another store object on
  the same file (another process): new, changed, deleted and purged records.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_noninterference import assert_noninterference, scenario

import stratamem as sm
from stratamem.embed import EmbedderError
from stratamem.embed.hashing import HashEmbedder
from stratamem.search import dense
from stratamem.search.dense import quantise
from stratamem.storage.sqlite.vector_cache import VectorCache
from stratamem.storage.vectors import DenseQuery

SQLITE = ["sqlite-memory", "sqlite-file"]


@pytest.fixture
def prefilter_always(monkeypatch):
    """The two-pass ranking at every size, keeping as few rows as possible (ties are still all kept)."""
    monkeypatch.setattr(dense, "PREFILTER_ABOVE", 0)
    monkeypatch.setattr(dense, "PREFILTER", 1)


@pytest.mark.parametrize("backend", SQLITE)
@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=scenario())
def test_prefilter_sees_only_visible_vectors(prefilter_always, backend, mode, tmp_path, data):
    assert_noninterference(
        backend, tmp_path, data, prepare=lambda store: store.reindex(), search_mode=mode, embedder="hash"
    )


class _Rows:
    """A VectorCache filled directly (no database): ids, agents, levels and int8 codes."""

    def __init__(self, rows: list[tuple[int, str, int, np.ndarray]], dim: int) -> None:
        self.cache = VectorCache()
        self.cache._reset(dim)
        self.cache._grow(len(rows))
        for i, (mem_id, agent, level, vector) in enumerate(rows):
            codes, scale = quantise(vector)
            self.cache.row_of[mem_id] = i
            self.cache.ids[i] = mem_id
            self.cache.agents[i] = self.cache.agent_code.setdefault(agent, len(self.cache.agent_code))
            self.cache.levels[i], self.cache.valid[i], self.cache.scales[i] = level, True, scale
            self.cache.mat[i] = codes
        self.cache.n = len(rows)
        touched = np.arange(len(rows))
        self.cache.bits[:, touched] = dense.sign_bits(self.cache.mat[touched]).T


DIM = 24
vectors = st.lists(st.integers(-3, 3), min_size=DIM, max_size=DIM).map(
    lambda v: np.asarray(v, dtype=np.float32)
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    visible=st.lists(vectors, min_size=1, max_size=30),
    invisible=st.lists(st.tuples(vectors, st.sampled_from(["above", "outsider", "hidden"])), max_size=30),
    query=vectors,
    keep=st.integers(1, 8),
    k=st.integers(1, 6),
    seed=st.integers(0, 1000),
)
def test_prefilter_cut_off_is_a_function_of_visible_rows(
    prefilter_always, monkeypatch, visible, invisible, query, keep, k, seed
):
    """Same top (ids and bit-identical scores) whether invisible rows are in the matrix or not, in any order."""
    monkeypatch.setattr(dense, "PREFILTER", keep)
    plain = [(i + 1, "a", 1, v) for i, v in enumerate(visible)]
    extra = []
    hidden_ids = []
    for j, (v, kind) in enumerate(invisible):
        mem_id = 1000 + j
        extra.append((mem_id, "z" if kind == "outsider" else "a", 3 if kind == "above" else 1, v))
        if kind == "hidden":
            hidden_ids.append(mem_id)
    noisy = plain + extra
    np.random.default_rng(seed).shuffle(noisy)
    q = DenseQuery.make("m", query, floor=-2.0)
    a = _Rows(plain, DIM).cache.top(["a"], 2, [], q, k)
    b = _Rows(noisy, DIM).cache.top(["a"], 2, hidden_ids, q, k)
    assert sorted(a) == sorted(b)


def test_prefilter_keeps_the_exact_answer_when_the_cut_off_is_wide(monkeypatch):
    """With PREFILTER at least the visible count the two passes are the exact scan."""
    rng = np.random.default_rng(5)
    rows = [(i + 1, "a", 0, rng.standard_normal(DIM).astype(np.float32)) for i in range(300)]
    q = DenseQuery.make("m", rng.standard_normal(DIM).astype(np.float32), floor=-2.0)
    exact = _Rows(rows, DIM).cache.top(["a"], 0, [], q, 10)
    monkeypatch.setattr(dense, "PREFILTER_ABOVE", 0)
    monkeypatch.setattr(dense, "PREFILTER", 300)
    assert _Rows(rows, DIM).cache.top(["a"], 0, [], q, 10) == exact


class CountingEmbedder(HashEmbedder):
    def __init__(self, fail: bool = False) -> None:
        super().__init__(64)
        self.queries: list[str] = []
        self.fail = fail

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        if self.fail:
            raise EmbedderError("the embedding model failed: test")
        return super().embed_query(text)


def test_query_vectors_are_cached_per_session(make_store):
    embedder = CountingEmbedder()
    store = make_store(search_mode="hybrid", embedder=embedder)
    one, two = store.session("a"), store.session("a")
    one.save("k", "river boats at dawn")
    first = one.search("boats")
    assert one.search("boats") == first  # same answer, from the cached vector
    assert embedder.queries == ["boats"]
    assert two.search("boats") == first
    assert embedder.queries == ["boats", "boats"]  # another session: its own embedding, no shared timing


def test_the_query_cache_is_bounded(monkeypatch):
    import stratamem.search.semantic as semantic

    monkeypatch.setattr(semantic, "QUERY_CACHE", 3)
    store = sm.open_store(":memory:", search_mode="hybrid", embedder=HashEmbedder(64))
    s = store.session()
    for i in range(10):
        s.search(f"word{i}")
    assert len(store.semantic._queries) == 3


def test_an_embedding_error_in_the_worker_falls_back_when_the_mode_was_defaulted(monkeypatch, caplog):
    monkeypatch.delenv("STRATAMEM_SEARCH_MODE", raising=False)
    store = sm.open_store(":memory:", embedder=CountingEmbedder(fail=True))
    assert store.search_mode == "hybrid"
    s = store.session()
    s.save("a", "apples")
    assert [h.memory.key for h in s.search("apples")] == ["a"]
    assert store.search_mode == "lexical" and "unavailable" in caplog.text


def test_an_embedding_error_in_the_worker_is_raised_when_the_mode_was_chosen():
    store = sm.open_store(":memory:", search_mode="hybrid", embedder=CountingEmbedder(fail=True))
    s = store.session()
    s.save("a", "apples")
    with pytest.raises(EmbedderError, match="failed"):
        s.search("apples")
    with pytest.raises(EmbedderError, match="failed"):
        s.search("apples", mode="semantic")


def test_a_query_vector_of_the_wrong_dimension_is_an_error():
    class Short(HashEmbedder):
        def embed_query(self, text: str) -> np.ndarray:
            return super().embed_query(text)[:10]

    store = sm.open_store(":memory:", search_mode="semantic", embedder=Short(64))
    s = store.session()
    s.save("a", "apples")
    with pytest.raises(EmbedderError, match="dimension"):
        s.search("apples")


def test_the_matrix_follows_another_process(tmp_path, clock):
    """Two store objects on one file stand for two processes; each search sees the other's writes."""
    path = str(tmp_path / "two.db")
    writer = sm.open_store(path, search_mode="semantic", embedder=HashEmbedder(64), clock=clock)
    reader = sm.open_store(path, search_mode="semantic", embedder=HashEmbedder(64), clock=clock)
    try:
        w, r = writer.session("a"), reader.session("a")
        w.save("boat", "river boats")
        w.save("tea", "green tea leaves")
        writer.reindex()
        assert [h.memory.key for h in r.search("river boats")] == ["boat"]
        w.save("boat", "green tea kettle")  # changed: its old vector must not answer
        assert [h.memory.key for h in r.search("river boats")] == []
        writer.reindex()
        assert [h.memory.key for h in r.search("green tea")][:2] in (["tea", "boat"], ["boat", "tea"])
        w.delete("tea")
        assert [h.memory.key for h in r.search("green tea")] == ["boat"]
        clock.advance(10)
        writer.purge(clock.now)  # rows go, the epoch moves: the reader reloads its matrix
        assert [h.memory.key for h in r.search("green tea")] == ["boat"]
        w.save("new", "river boats again")
        writer.reindex()
        assert [h.memory.key for h in r.search("river boats again")] == ["new"]
    finally:
        writer.close()
        reader.close()


def test_row_dots_are_exact_with_and_without_vecdot(monkeypatch):
    """Dot products of int8 codes are integers below 2**24: row by row or with einsum, the same floats."""
    from stratamem.storage.sqlite import vector_cache

    rng = np.random.default_rng(7)
    block = rng.integers(-127, 128, size=(300, 384)).astype(np.float32)
    q = rng.integers(-127, 128, size=384).astype(np.float32)
    exact = block.astype(np.int64) @ q.astype(np.int64)
    fast = vector_cache._row_dots(block, q)
    monkeypatch.delattr(np, "vecdot", raising=False)
    assert np.array_equal(fast, exact) and np.array_equal(vector_cache._row_dots(block, q), exact)
