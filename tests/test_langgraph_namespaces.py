"""LangGraph namespaces are filters, never search terms (issue 27, item 4).

The adapter writes each namespace label into the memory's key and tags; a query word naming a label
must not rank the items under it (it would match every one of them and order them by length).
"""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.store.base")

import stratamem as sm
from stratamem.embed import semantic_available
from stratamem.errors import ValidationError
from stratamem.integrations.langgraph import StratamemStore


def _keys(items):
    return [(i.namespace, i.key) for i in items]


def test_a_query_word_naming_the_namespace_does_not_score(make_store):
    lg = StratamemStore(make_store(search_mode="lexical").session("graph"))
    lg.put(("users", "u1"), "last_message", {"text": "hello there"})
    lg.put(("users", "u1"), "pet", {"text": "a golden retriever, the family dog"})
    found = lg.search(("users", "u1"), query="what dog does the user have?")
    assert _keys(found) == [(("users", "u1"), "pet")]
    assert all(item.score > 0 for item in found)
    # a query of namespace words only has nothing left to rank by, lexically
    assert lg.search(("users", "u1"), query="user u1") == []


def test_labels_below_the_prefix_do_not_score_either(make_store):
    lg = StratamemStore(make_store(search_mode="lexical").session("graph"))
    lg.put(("users", "alice"), "note", {"text": "hello there, nice weather"})
    lg.put(("users", "bob"), "note", {"text": "drinks green tea every morning"})
    found = lg.search(("users",), query="does alice drink tea?")
    assert _keys(found) == [(("users", "bob"), "note")]


def test_the_value_and_filter_still_decide(make_store):
    lg = StratamemStore(make_store(search_mode="lexical").session("graph"))
    lg.put(("docs",), "a", {"text": "python packaging guide", "lang": "en"})
    lg.put(("docs",), "b", {"text": "python typing notes", "lang": "de"})
    lg.put(("other",), "c", {"text": "python everywhere"})
    assert {k for _, k in _keys(lg.search(("docs",), query="python"))} == {"a", "b"}
    assert _keys(lg.search(("docs",), query="python", filter={"lang": "de"})) == [(("docs",), "b")]


def test_unranked_must_be_strings(make_store):
    session = make_store(search_mode="lexical").session("graph")
    session.save("k", "green tea notes")
    for bad in ("users", [1], [None]):
        with pytest.raises(ValidationError):
            session.search("text", unranked=bad)
    assert [h.memory.key for h in session.search("green tea", unranked=["tea"])] == ["k"]
    assert session.search("tea", unranked=["tea"]) == []


@pytest.mark.skipif(not semantic_available(), reason="stratamem[semantic] not installed")
def test_the_issue_example_in_a_hybrid_store(tmp_path):
    store = sm.open_store(str(tmp_path / "lg.db"), search_mode="hybrid")
    try:
        lg = StratamemStore(store.session("graph"))
        lg.put(("users", "u1"), "last_message", {"text": "hello there"})
        # longer than the other item, so a namespace word matching both would rank it second (by length)
        pet = {"text": "a golden retriever named Biscuit who loves long walks on the beach"}
        lg.put(("users", "u1"), "pet", pet)
        found = lg.search(("users", "u1"), query="what dog does the user have?")
        assert _keys(found)[0] == (("users", "u1"), "pet")
        assert all(item.score > 0 for item in found)
    finally:
        store.close()
