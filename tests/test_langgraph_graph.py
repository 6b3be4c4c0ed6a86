"""A real compiled LangGraph graph gets classified memory by swapping its store (sync and async)."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph.graph")

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

import stratamem as sm
from stratamem.integrations.langgraph import StratamemStore


class State(TypedDict):
    user: str
    fact: str
    recalled: list[str]


def _graph(store: StratamemStore) -> Any:
    """Remember the turn's fact under the user's namespace, then recall everything known about the user."""

    def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
        if state["fact"]:
            store.put(("users", state["user"]), f"fact-{len(state['fact'])}", {"text": state["fact"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
        return {"recalled": sorted(i.value["text"] for i in store.search(("users", state["user"])))}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


def test_a_compiled_graph_reads_and_writes_at_the_sessions_level(tmp_path):
    with sm.open_store(str(tmp_path / "graph.db")) as store:
        public = store.session("assistant")
        graph = _graph(StratamemStore(public))
        out = graph.invoke({"user": "sam", "fact": "likes tea", "recalled": []})
        assert out["recalled"] == ["likes tea"]

        secret = store.session("assistant")
        secret.escalate(sm.Level.CONFIDENTIAL, "read the contract")
        out = _graph(StratamemStore(secret)).invoke({"user": "sam", "fact": "salary is 90k", "recalled": []})
        assert out["recalled"] == ["likes tea", "salary is 90k"]
        [memory] = [m for m in secret.list() if "90k" in m.content]
        assert memory.level is sm.Level.CONFIDENTIAL  # written at the taint, never chosen by the graph

        # a fresh PUBLIC session's graph never sees the confidential memory
        out = _graph(StratamemStore(store.session("assistant"))).invoke(
            {"user": "sam", "fact": "", "recalled": []}
        )
        assert out["recalled"] == ["likes tea"]


def test_a_compiled_graph_runs_async(tmp_path):
    with sm.open_store(str(tmp_path / "graph.db")) as store:
        graph = _graph(StratamemStore(store.session("assistant")))
        out = asyncio.run(graph.ainvoke({"user": "ana", "fact": "lives in Lisbon", "recalled": []}))
        assert out["recalled"] == ["lives in Lisbon"]
