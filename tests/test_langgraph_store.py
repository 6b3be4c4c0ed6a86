"""The LangGraph store: LangGraph's own store cases (ported), run against ours and its in-memory store."""

from __future__ import annotations

import asyncio
from datetime import UTC, timedelta

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

import stratamem as sm
from stratamem.integrations.langgraph import StratamemStore


@pytest.fixture
def store(tmp_path):
    s = sm.open_store(str(tmp_path / "lg.db"))
    yield s
    s.close()


@pytest.fixture
def lg(store):
    return StratamemStore(store.session("graph"))


def _view(items):
    return [(i.namespace, i.key, i.value) for i in items]


def _both(lg):
    return [lg, InMemoryStore()]


def test_put_get_delete_roundtrip(lg):
    lg.put(("users", "u1"), "prefs", {"lang": "python", "n": 3, "nested": {"a": [1, 2]}})
    item = lg.get(("users", "u1"), "prefs")
    assert item.value == {"lang": "python", "n": 3, "nested": {"a": [1, 2]}}
    assert item.namespace == ("users", "u1") and item.key == "prefs" and item.created_at <= item.updated_at
    lg.put(("users", "u1"), "prefs", {"lang": "rust"})
    assert lg.get(("users", "u1"), "prefs").value == {"lang": "rust"}
    lg.delete(("users", "u1"), "prefs")
    assert lg.get(("users", "u1"), "prefs") is None
    lg.delete(("users", "u1"), "prefs")  # idempotent, like LangGraph's stores
    assert lg.get(("nobody",), "nothing") is None


def test_keys_with_separators_stay_apart(lg):
    lg.put(("a",), "b..c", {"v": 1})
    lg.put(("a", "b"), "c", {"v": 2})
    lg.put(("a",), ".x", {"v": 3})
    assert lg.get(("a",), "b..c").value == {"v": 1}
    assert lg.get(("a", "b"), "c").value == {"v": 2}
    assert lg.get(("a",), ".x").value == {"v": 3}
    assert sorted(lg.list_namespaces()) == [("a",), ("a", "b")]


@pytest.mark.parametrize("bad", [("a.b",), ("",), ("langgraph", "x"), ()])
def test_invalid_namespaces_are_refused(lg, bad):
    with pytest.raises((InvalidNamespaceError, ValueError)):
        lg.put(bad, "k", {"v": 1})


def test_batch_order_matches_langgraphs_store(lg):
    """Ported from LangGraph's test_batch_order: results come back in the operations' order."""
    stores = _both(lg)
    for s in stores:
        s.put(("test", "foo"), "key1", {"data": "value1"})
        s.put(("test", "bar"), "key2", {"data": "value2"})
    ops = [
        GetOp(namespace=("test", "foo"), key="key1"),
        PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
        SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        GetOp(namespace=("test",), key="key3"),
    ]
    ours, theirs = (s.batch(ops) for s in stores)
    assert len(ours) == len(theirs) == 5
    assert ours[0].value == theirs[0].value and ours[1] is None and theirs[1] is None
    assert _view(ours[2]) == _view(theirs[2])
    assert sorted(ours[3]) == sorted(theirs[3])
    assert ours[4] is None and theirs[4] is None


def test_search_filters_and_paging_match_langgraphs_store(lg):
    reference = InMemoryStore()
    docs = [(("docs", "a"), f"d{i}", {"kind": "report" if i % 2 else "note", "n": i}) for i in range(7)]
    docs += [(("docs", "b"), "x", {"kind": "report", "n": 99}), (("other",), "y", {"kind": "report", "n": 1})]
    for s in (lg, reference):
        for ns, key, value in docs:
            s.put(ns, key, value)
    cases = [
        dict(namespace_prefix=("docs",)),
        dict(namespace_prefix=("docs",), filter={"kind": "report"}),
        dict(namespace_prefix=("docs", "a"), filter={"n": {"$gt": 2}}),
        dict(namespace_prefix=("docs",), filter={"kind": {"$ne": "report"}}),
        dict(namespace_prefix=(), filter={"kind": "report"}),
    ]
    for case in cases:
        assert sorted(
            _view(lg.search(case["namespace_prefix"], filter=case.get("filter"), limit=50))
        ) == sorted(_view(reference.search(case["namespace_prefix"], filter=case.get("filter"), limit=50))), (
            case
        )
    pages = [lg.search(("docs",), limit=3, offset=o) for o in (0, 3, 6)]
    keys = [i.key for page in pages for i in page]
    assert len(keys) == 8 == len(set(keys)) and all(len(p) <= 3 for p in pages)


def test_list_namespaces_matches_langgraphs_store(lg):
    """Ported from LangGraph's test_list_namespaces cases: prefix, suffix, wildcards, depth, paging."""
    reference = InMemoryStore()
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for s in (lg, reference):
        for i, ns in enumerate(namespaces):
            s.put(ns, f"id_{i}", {"id": i})
    cases = [
        dict(),
        dict(prefix=("a", "b")),
        dict(suffix=("f",)),
        dict(prefix=("a", "*", "f")),
        dict(max_depth=2),
        dict(prefix=("users",), max_depth=2),
        dict(suffix=("*", "f")),
        dict(limit=3, offset=2),
        dict(prefix=("nope",)),
    ]
    for case in cases:
        assert lg.list_namespaces(**case) == reference.list_namespaces(**case), case
    lg.delete(("users", "123"), "id_6")
    assert ("users", "123") not in lg.list_namespaces()


def test_classification_follows_the_session(store):
    public = StratamemStore(store.session("graph"))
    secret_session = store.session("graph")
    secret_session.escalate(sm.Level.CONFIDENTIAL, "contract")
    secret = StratamemStore(secret_session)
    secret.put(("deals",), "acme", {"price": "1.2M"})
    public.put(("deals",), "public", {"note": "hello"})
    assert public.get(("deals",), "acme") is None
    assert [i.key for i in public.search(("deals",))] == ["public"]
    assert public.list_namespaces() == [("deals",)]
    assert {i.key for i in secret.search(("deals",))} == {"acme", "public"}
    other_agent = StratamemStore(store.session("someone-else"))
    assert other_agent.get(("deals",), "public") is None and other_agent.list_namespaces() == []


def test_writes_pass_the_policy_gate(lg):
    with pytest.raises(sm.PolicyBlocked):
        lg.put(("notes",), "inject", {"text": "cat ~/.ssh/id_rsa"})
    assert lg.get(("notes",), "inject") is None


def test_other_memories_never_appear_as_items(store, lg):
    session = lg.session
    session.save("notes..plain", "not json at all")
    session.save("x", "plain memory")
    assert lg.get(("notes",), "plain") is None and lg.list_namespaces() == []


def test_ttl_expires_items(tmp_path):
    from datetime import datetime

    clock = {"t": datetime(2026, 1, 1, tzinfo=UTC)}
    store = sm.open_store(str(tmp_path / "ttl.db"), clock=lambda: clock["t"])
    try:
        lg = StratamemStore(store.session("graph"), ttl={"default_ttl": 5})
        lg.put(("t",), "default", {"v": 1})
        lg.put(("t",), "long", {"v": 2}, ttl=60)
        lg.put(("t",), "forever", {"v": 3}, ttl=None)
        clock["t"] += timedelta(minutes=6)
        assert lg.get(("t",), "default") is None
        assert {i.key for i in lg.search(("t",))} == {"long", "forever"}
        clock["t"] += timedelta(hours=2)
        assert [i.key for i in lg.search(("t",))] == ["forever"]
    finally:
        store.close()


def test_query_uses_stratamem_search(lg):
    lg.put(("kb",), "py", {"text": "python packaging with pip"})
    lg.put(("kb",), "rs", {"text": "rust cargo crates"})
    lg.put(("elsewhere",), "py2", {"text": "python again"})
    hits = lg.search(("kb",), query="python")
    assert [h.key for h in hits] == ["py"] and hits[0].score is not None


def test_async_methods(lg):
    async def main():
        await lg.aput(("a",), "k", {"v": 1})
        got = await lg.aget(("a",), "k")
        found = await lg.asearch(("a",))
        spaces = await lg.alist_namespaces()
        await lg.adelete(("a",), "k")
        return got, found, spaces, await lg.aget(("a",), "k")

    got, found, spaces, gone = asyncio.run(main())
    assert got.value == {"v": 1} and [i.key for i in found] == ["k"] and spaces == [("a",)] and gone is None
