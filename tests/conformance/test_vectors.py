"""Vectors, once the store has recorded its model: saves mark versions pending, a reindex embeds them,
an update or a delete makes the marks follow, and a dense search ranks only what the session sees."""

from __future__ import annotations

from stratamem import Level


def _pending(store) -> int:
    return store.backend.vectors.all_pending_vectors(100)[1]


def test_pending_marks_follow_saves_and_reindex(make_store):
    store = make_store(search_mode="semantic", embedder="hash")
    s = store.session("a")
    s.save("k0", "note number 0 about gardening")
    assert store.reindex() == 1  # the first reindex records the model and embeds what is there
    for i in (1, 2):
        s.save(f"k{i}", f"note number {i} about gardening")
    assert _pending(store) == 2
    assert store.reindex() == 2
    assert _pending(store) == 0
    s.save("k0", "now about sailing")  # an update makes its vector pending again
    assert _pending(store) == 1
    store.reindex()
    assert [h.memory.key for h in s.search("now about sailing", max_results=1)] == ["k0"]


def test_dense_search_ranks_only_the_visible_view(make_store):
    store = make_store(search_mode="semantic", embedder="hash")
    high = store.session("a")
    high.escalate(Level.CONFIDENTIAL, "x")
    high.save("secret", "apple river")
    store.session("c").save("outsider", "apple river")
    low = store.session("a")
    low.save("mine", "apple river tea")
    store.reindex()
    assert [h.memory.key for h in low.search("apple river", max_results=10)] == ["mine"]
