import itertools

import pg_server
import pytest
from conftest import BACKENDS, FakeClock
from hypothesis import given, settings
from hypothesis import strategies as st

from stratamem import Level, open_store


def keys(hits):
    return [h.memory.key for h in hits]


def test_stemming_matches_inflections(store):
    s = store.session("main")
    s.save("hobby", "Caroline enjoys running marathons")
    s.save("other", "Melanie paints landscapes")
    assert keys(s.search("runs")) == ["hobby"]
    assert keys(s.search("marathon")) == ["hobby"]
    assert keys(s.search("painting")) == ["other"]


def test_spanish_stemming_by_store_option(make_store):
    store = make_store(languages=("spanish",))
    s = store.session("main")
    s.save("receta", "Las canciones tradicionales de la abuela")
    assert keys(s.search("canción")) == ["receta"]
    assert keys(s.search("tradicional")) == ["receta"]


def test_key_content_and_tags_are_searched(store):
    s = store.session("main")
    s.save("project-deadline", "due soon")
    s.save("b", "the deadline is friday")
    s.save("c", "unrelated", tags=["deadline-tracking"])
    assert set(keys(s.search("deadline"))) == {"project-deadline", "b", "c"}


def test_level_names_and_agent_ids_are_never_matched(store):
    s = store.session("zebra-agent")
    s.escalate(Level.CONFIDENTIAL, "x")
    s.save("k", "ordinary words")
    assert s.search("confidential") == []
    assert s.search("zebra agent") == []


def test_or_semantics_more_matching_terms_rank_higher(store):
    s = store.session("main")
    s.save("one", "apple pie recipe for the weekend gathering")
    s.save("two", "apple and banana pie recipe for the weekend gathering")
    s.save("three", "banana bread recipe for the weekend gathering")
    s.save("none", "weather is nice")
    ranked = s.search("apple banana pie")
    assert keys(ranked)[0] == "two"
    assert set(keys(ranked)) == {"one", "two", "three"}
    assert all(a.score >= b.score > 0 for a, b in itertools.pairwise(ranked))


def test_empty_and_star_return_most_recent(store):
    s = store.session("main")
    for i in range(5):
        s.save(f"k{i}", f"memory {i}")
    s.save("k1", "memory 1 updated")
    assert keys(s.search("")) == ["k1", "k4", "k3", "k2", "k0"]
    assert keys(s.search("*", max_results=2)) == ["k1", "k4"]
    assert keys(s.search("   ")) == keys(s.search(""))


def test_max_results_clamped(store):
    s = store.session("main")
    for i in range(120):
        s.save(f"k{i}", "common word")
    assert len(s.search("common", max_results=0)) == 1
    assert len(s.search("common", max_results=-5)) == 1
    assert len(s.search("common", max_results=1000)) == 100
    assert len(s.search("common", max_results="seven")) == 10
    assert len(s.search("common", max_results=2.5)) == 10
    assert len(s.search("common", max_results=3.0)) == 3


NASTY = [
    '"',
    "'",
    '"unbalanced',
    "a AND",
    "OR OR",
    "NOT",
    "NEAR(a b, 2)",
    "col:term",
    "-",
    "--",
    "*",
    "**",
    "a*",
    "^start",
    "(",
    ")",
    "{}",
    "[]",
    "\\",
    "%",
    "_",
    "😀🔥",
    "\x00",
    "\x1b[31m",
    "a" * 10_000,
    "word " * 2_000,
    "SELECT * FROM memories; DROP TABLE memories;--",
    "\udcff",
    "ß",
    "İstanbul",
]


@pytest.mark.parametrize("query", NASTY)
def test_any_string_is_a_valid_query(store, query):
    s = store.session("main")
    s.save("k", "word of the day: start")
    s.search(query)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_random_queries_never_raise(query):
    with open_store(":memory:") as store:
        s = store.session("main")
        s.save("k", "some text with words")
        for hit in s.search(query):
            assert hit.score >= 0


WORDS = ["alpha", "beta", "gamma", "delta", "common", "shared", "rare", "unique"]


_SHARED_PG: dict[str, object] = {}


def _pruning_session(backend: str):
    """A session with an empty view: a fresh in-memory SQLite store, or a new agent in one shared PostgreSQL
    store (a session's statistics cover only its own partitions, so agents do not see each other)."""
    if backend == "sqlite":
        store = open_store(":memory:")
        return store, store.session("main")
    if "store" not in _SHARED_PG:
        _SHARED_PG["store"] = open_store(pg_server.fresh_url(), clock=FakeClock())
        _SHARED_PG["n"] = 0
    _SHARED_PG["n"] += 1
    return None, _SHARED_PG["store"].session(f"agent{_SHARED_PG['n']}")


@pytest.fixture(scope="module", autouse=True)
def _close_shared_pg():
    yield
    store = _SHARED_PG.pop("store", None)
    if store is not None:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite"] + (["postgres"] if "postgres" in BACKENDS else []))
@settings(max_examples=80, deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), min_size=1, max_size=40),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
    limit=st.integers(1, 12),
    essential=st.integers(1, 5),
)
def test_pruned_ranking_equals_exhaustive(backend, docs, query, limit, essential):
    """MaxScore pruning is exact: forcing any candidate split gives the exhaustive answer."""
    from unittest import mock

    from stratamem.storage.sql import pruning

    own, s = _pruning_session(backend)
    try:
        for i, words in enumerate(docs):
            s.save(f"d{i}", " ".join(words))
        text = " ".join(query)
        with mock.patch.object(pruning, "essential_terms", lambda freqs, weights: len(freqs)):
            exhaustive = [(h.memory.key, h.score) for h in s.search(text, max_results=limit)]
        with mock.patch.object(pruning, "essential_terms", lambda freqs, weights: min(essential, len(freqs))):
            pruned = [(h.memory.key, h.score) for h in s.search(text, max_results=limit)]
        assert pruned == exhaustive
    finally:
        if own is not None:
            own.close()
