"""A backlog of pending vectors (after an import): a search pays only a bounded catch-up, the idle
embedder of a server works the rest off, and the lexical side finds what still waits."""

from __future__ import annotations

import threading

import pytest

import stratamem.search.semantic as semantic
from stratamem.embed.hashing import HashEmbedder
from stratamem.search.idle import IdleEmbedder


class SlowModel(HashEmbedder):
    """The hash embedder on a fake monotonic clock: every text embedded takes ``cost`` seconds of it."""

    def __init__(self, cost: float = 0.0) -> None:
        super().__init__(64)
        self.cost = cost
        self.now = 0.0
        self.documents = 0

    def clock(self) -> float:
        return self.now

    def embed_documents(self, texts):
        self.documents += len(texts)
        self.now += self.cost * len(texts)
        return super().embed_documents(texts)

    def embed_query(self, text):
        return HashEmbedder.embed_documents(self, [text])[0]  # queries are not the backlog


def backlog(make_store, model, count):
    store = make_store(search_mode="hybrid", embedder=model)
    s = store.session()
    s.save_many([{"key": f"k{i:04d}", "content": f"note {i} about the garden shed"} for i in range(count)])
    assert store.semantic.embedder is model  # loaded, as a server's warm-up does: its records are pending
    return store, s


def pending(store) -> int:
    return store.backend.vectors.all_pending_vectors(1)[1]


def test_a_search_after_a_big_import_embeds_at_most_catch_up(make_store):
    model = SlowModel()
    store, s = backlog(make_store, model, 600)
    assert s.search("garden shed", max_results=5)  # found lexically meanwhile
    assert model.documents <= semantic.CATCH_UP < 600
    assert pending(store) == 600 - model.documents


def test_a_search_stops_catching_up_when_its_time_budget_is_spent(make_store, monkeypatch):
    # 10 ms of the fake clock a text: the first chunk (4 texts, 40 ms) leaves budget for one more chunk
    model = SlowModel(cost=0.010)
    monkeypatch.setattr(semantic, "clock", model.clock)
    _, s = backlog(make_store, model, 100)
    s.search("garden")
    assert model.documents == 2 * semantic.CATCH_UP_CHUNK
    # a model far slower than the budget still embeds one chunk a search, so a session catches itself up
    model.cost = 10.0
    s.search("shed")
    assert model.documents == 3 * semantic.CATCH_UP_CHUNK


def test_the_idle_embedder_waits_for_quiet_then_works_the_backlog_off(make_store):
    ticks = [0.0]
    store, s = backlog(make_store, HashEmbedder(), 40)
    idle = IdleEmbedder(store.semantic, batch=16, quiet=0.5, clock=lambda: ticks[0])
    idle.touch()  # a request just arrived
    assert idle.step() == 0 and pending(store) == 40
    ticks[0] = 0.6
    assert [idle.step(), idle.step(), idle.step(), idle.step()] == [16, 16, 8, 0]
    assert pending(store) == 0
    assert [h.memory.key for h in s.search("garden shed", mode="semantic", max_results=3)]


def test_the_idle_embedder_thread_embeds_and_stops_cleanly(make_store):
    store, _ = backlog(make_store, HashEmbedder(), 30)
    idle = IdleEmbedder(store.semantic, batch=8, quiet=0.0, poll=0.01)
    idle.start()
    try:
        for _ in range(2000):  # condition-driven: no assumption about how fast the machine is
            if pending(store) == 0:
                break
            threading.Event().wait(0.01)
        assert pending(store) == 0 and idle.embedded == 30
    finally:
        idle.stop()
    assert not idle.running


def test_a_lexical_store_starts_no_idle_embedder(make_store):
    store = make_store(search_mode="lexical")
    idle = IdleEmbedder(store.semantic)
    idle.start()
    assert not idle.running
    idle.stop()


@pytest.mark.parametrize("failure", [RuntimeError("model crashed")])
def test_a_failing_model_pauses_the_idle_embedder_without_killing_it(make_store, failure):
    class Broken(HashEmbedder):
        def embed_documents(self, texts):
            raise failure

    store, _ = backlog(make_store, Broken(), 3)
    idle = IdleEmbedder(store.semantic, quiet=0.0, poll=0.01)
    idle.start()
    try:
        threading.Event().wait(0.05)
        assert idle.running
    finally:
        idle.stop()
    assert not idle.running and pending(store) == 3
