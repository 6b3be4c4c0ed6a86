"""SQLite hybrid and semantic answers read only the rows they need (``vectors._answer``).

The fast path fuses the two lists by memory id and reads only the rows that can be in the answer; it is
taken only when the process's matrix is exactly the search's snapshot and the dense list has no tie at
its cut. These tests hold it to the general path (every dense row read, lists merged by (agent, key,
level)) on the same stores, and check that a matrix brought ahead of a search's snapshot by another
reader never puts a row the snapshot lacks into the answer.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratamem as sm
from stratamem.embed.hashing import HashEmbedder
from stratamem.search import fusion
from stratamem.storage.sqlite import vectors
from stratamem.storage.sqlite.vector_cache import VectorCache

WORDS = ["heron", "tax", "dawn", "april", "sailing", "garden", "coffee", "berlin", "river", "forms"]


def answers(session, queries, mode):
    return [
        [(h.memory.key, h.memory.agent_id, h.score) for h in session.search(q, max_results=3, mode=mode)]
        for q in queries
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    notes=st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.integers(0, 7),
            st.lists(st.sampled_from(WORDS[:5]), min_size=1, max_size=2),
        ),
        min_size=1,
        max_size=40,
    ),
    mode=st.sampled_from(["hybrid", "semantic"]),
    candidates=st.sampled_from([3, 50]),  # 3: ties at the dense list's cut are common
)
def test_the_fast_path_answers_like_the_general_one(tmp_path_factory, notes, mode, candidates):
    store = sm.open_store(
        str(tmp_path_factory.mktemp("s") / "m.db"), search_mode="hybrid", embedder=HashEmbedder(16)
    )
    for agent, key, words in notes:
        store.session(agent_id=agent).save(f"k{key}", " ".join(words))
    queries = ["heron dawn", "tax forms april", "coffee", "river garden sailing", "k1"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fusion, "DENSE_CANDIDATES", candidates)
        fast = answers(store.session(agent_id="a", peers=["b"]), queries, mode)
        synced = VectorCache.sync
        patch.setattr(VectorCache, "sync", lambda self, *args: (synced(self, *args), None)[1])
        general = answers(store.session(agent_id="a", peers=["b"]), queries, mode)
    store.close()
    assert fast == general


def test_a_plain_search_takes_the_fast_path(tmp_path, monkeypatch):
    store = sm.open_store(str(tmp_path / "m.db"), search_mode="hybrid", embedder=HashEmbedder(32))
    s = store.session()
    for i, word in enumerate(WORDS):
        s.save(f"k{i}", f"a note about {word}")
    calls = []
    answer = vectors._answer
    monkeypatch.setattr(vectors, "_answer", lambda *args: calls.append(1) or answer(*args))
    assert s.search("heron", max_results=3)
    assert calls == [1]
    store.close()


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_matrix_ahead_of_the_snapshot_changes_nothing_in_its_answer(tmp_path, mode):
    """Another reader, in a newer transaction, brings the shared matrix further during a search's
    transaction: that search still answers from its own snapshot — same hits, same scores."""
    from stratamem.storage.sql.rows import to_us
    from stratamem.storage.sqlite.rank import Scope
    from stratamem.storage.vectors import DenseQuery

    embedder = HashEmbedder(32)
    store = sm.open_store(str(tmp_path / "m.db"), search_mode="hybrid", embedder=embedder)
    s = store.session()
    for i, words in enumerate(["heron dawn", "heron river", "tax forms", "heron tax", "dawn river"]):
        s.save(f"k{i}", words)
    s.search("heron")  # every vector made, the matrix synced
    backend = store.backend
    query = DenseQuery.make(embedder.identity, embedder.embed_query("heron"))

    def answer(conn):
        scope = Scope(backend._session(conn, s.id), to_us(store.now()))
        hits = vectors.search(backend, conn, scope, ["heron"], 10, mode, query)
        return [(h.memory.key, h.score) for h in hits]

    def newer():
        other = store.session()
        other.save("new", "heron")  # the query's own text: the best dense score, which moves the min-max
        other.search("heron")  # embeds it and brings the matrix past the first search's snapshot

    with backend._tx(write=False) as conn:
        before = answer(conn)
        writer = threading.Thread(target=newer)
        writer.start()
        writer.join(30)
        assert not writer.is_alive()
        assert backend.vector_cache().sync(conn, embedder.identity, 32) is None  # the matrix is ahead
        after = answer(conn)
    assert after == before and "new" not in [k for k, _ in after]
    assert "new" in [h.memory.key for h in s.search("heron", mode=mode)]
    store.close()


@pytest.mark.parametrize("mode", ["lexical", "hybrid", "semantic"])
def test_thousands_of_tied_memories_are_no_error(tmp_path, monkeypatch, mode):
    """Identical memories tie at each list's cut (BM25's and the dense one), and all of them are read to
    break the tie by key: more than SQLite's limit on bound parameters (lowered here to 200) is still one
    answer, not an error."""
    import sqlite3

    connect = sqlite3.connect

    def limited(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 200)
        return conn

    path = str(tmp_path / "m.db")
    with sm.open_store(path, search_mode="hybrid", embedder=HashEmbedder(32)) as writer:
        writer.session(agent_id="a").save_many(
            [{"key": f"k{i:04d}", "content": "the heron fishes at dawn"} for i in range(300)]
        )
    monkeypatch.setattr(sqlite3, "connect", limited)  # the searching store's connections only
    store = sm.open_store(path, search_mode="hybrid", embedder=HashEmbedder(32))
    s = store.session(agent_id="a")
    s.search("heron")  # embeds the 300 (catch-up batches of 256)
    s.search("heron")
    hits = s.search("the heron fishes at dawn", max_results=5, mode=mode)
    assert [h.memory.key for h in hits] == ["k0000", "k0001", "k0002", "k0003", "k0004"]
    store.close()
