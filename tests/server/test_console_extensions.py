"""The usage and graph views over stores that have them (shapes as the ledger and graph branches define them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

import pytest

import stratamem as sm
from stratamem.operator import OperatorView
from stratamem.server import extensions
from stratamem.store import Store


@dataclass
class Usage:
    session_id: str
    agent_id: str
    level: sm.Level
    model: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost_usd: Decimal
    time: datetime


@dataclass
class Node:
    name: str
    type: str
    level: sm.Level
    content: str
    agent_id: str


@dataclass
class Edge:
    source: str
    target: str
    relation: str
    level: sm.Level


@dataclass
class Page:
    nodes: tuple
    edges: tuple
    cursor: str | None
    truncated: bool


def test_without_them_the_views_say_not_available(store, monkeypatch):
    view = OperatorView.open(store, "RESTRICTED", "ops")
    monkeypatch.setattr(Store, "usage", None)  # a store without a ledger
    assert extensions.usage(view, {}) == {
        "available": False,
        "reason": "the usage ledger is not available in this store",
    }
    if not extensions.has_graph(store):
        assert extensions.graph(view, {"agent": "a"})["available"] is False


def test_usage_sums_per_day_and_model_within_the_clearance(store, monkeypatch):
    day = datetime(2026, 3, 1, 12, tzinfo=UTC)
    records = [
        Usage("s", "a", sm.Level.PUBLIC, "m1", 10, 5, 0, Decimal("0.10"), day),
        Usage("s", "a", sm.Level.INTERNAL, "m1", 20, 5, 0, Decimal("0.25"), day),
        Usage("s", "a", sm.Level.RESTRICTED, "m1", 999, 999, 0, Decimal("9.99"), day),
    ]
    asked = {}

    def usage(agent_id=None, since=None, until=None, limit=1000):
        asked.update(agent=agent_id, since=since, limit=limit)
        return records

    monkeypatch.setattr(store, "usage", usage, raising=False)
    view = OperatorView.open(store, "INTERNAL", "ops")
    answer = extensions.usage(view, {"agent": "a", "since": "2026-03-01T00:00:00+00:00"})
    assert answer == {
        "available": True,
        "rows": [
            {
                "day": "2026-03-01",
                "model": "m1",
                "cost_usd": "0.35",
                "input_tokens": 30,
                "output_tokens": 10,
                "calls": 2,
            }
        ],
    }
    assert asked["agent"] == "a" and asked["since"] == datetime(2026, 3, 1, tzinfo=UTC)
    with pytest.raises(sm.ValidationError):
        extensions.usage(view, {"since": "yesterday"})


def test_graph_reads_through_a_session_of_the_agent_at_the_clearance(store):
    writer = store.session("a")
    writer.graph.capture("<b>x</b>", "thing", "c" * 1000)
    writer.graph.capture("y", "thing")
    writer.graph.relate("<b>x</b>", "y", "knows")
    writer.escalate(sm.Level.INTERNAL, "test")
    writer.graph.capture("secret", "thing", "internal only")
    writer.escalate(sm.Level.CONFIDENTIAL, "test")
    writer.graph.capture("above", "thing", "confidential")
    assert extensions.has_graph(store)
    view = OperatorView.open(store, "INTERNAL", "ops")
    answer = extensions.graph(view, {"agent": "a"})
    names = {n["name"]: n for n in answer["nodes"]}
    assert set(names) == {"<b>x</b>", "y", "secret"}  # nothing above the console's clearance
    assert names["<b>x</b>"]["content"] == "c" * 400 and names["secret"]["level"] == "INTERNAL"
    assert [(e["source"], e["target"], e["relation"]) for e in answer["edges"]] == [
        ("<b>x</b>", "y", "knows")
    ]
    assert answer["available"] is True and answer["next"] is None and answer["truncated"] is False
    with pytest.raises(sm.ValidationError):
        extensions.graph(view, {})


def test_usage_from_the_real_ledger_within_the_clearance(store):
    from stratamem.turn.costs import CostLedger

    if not extensions.has_usage(store):
        pytest.skip("this store has no usage ledger")
    s = store.session("a")
    CostLedger(s).record("model-x", 100, 20, cost_usd="0.50")
    s.escalate("CONFIDENTIAL", "x")
    CostLedger(s).record("model-x", 900, 90, cost_usd="4.00")
    low = OperatorView.open(store, "INTERNAL", "ops")
    rows = extensions.usage(low, {})["rows"]
    assert [(r["model"], r["calls"], r["input_tokens"], r["cost_usd"]) for r in rows] == [
        ("model-x", 1, 100, "0.50")
    ]
    high = OperatorView.open(store, "CONFIDENTIAL", "ops")
    assert [(r["calls"], r["cost_usd"]) for r in extensions.usage(high, {"agent": "a"})["rows"]] == [
        (2, "4.50")
    ]


def test_a_graph_node_shows_observations_neighbours_and_levels_within_the_clearance(store):
    if not extensions.has_graph(store):
        pytest.skip("this store has no knowledge graph")
    writer = store.session("a")
    writer.graph.capture("Sam", "person", "engineer", observations=["likes tea"])
    writer.graph.capture("Billing", "project")
    writer.graph.relate("Sam", "Billing", "works_on", note="since May")
    writer.graph.relate("Sam", "Sam", "mentors")
    writer.escalate(sm.Level.CONFIDENTIAL, "test")
    writer.graph.capture("Payroll", "project")
    writer.graph.add_observations([("Sam", ["has a raise pending"])])
    writer.graph.relate("Payroll", "Sam", "pays")
    writer.graph.relate("Sam", "Billing", "audits")  # a CONFIDENTIAL edge between PUBLIC nodes
    writer.graph.capture("Secret", "thing")

    def edges(answer):
        return sorted(
            (e["direction"], e["relation"], e["level"], e["neighbour"]["name"], e["neighbour"]["level"])
            for e in answer["edges"]
        )

    low = extensions.graph_node(OperatorView.open(store, "INTERNAL", "ops"), {"agent": "a", "name": "Sam"})
    assert low["node"]["level"] == "PUBLIC" and low["node"]["type"] == "person"
    assert [(o["text"], o["level"]) for o in low["node"]["observations"]] == [("likes tea", "PUBLIC")]
    assert edges(low) == [
        ("out", "works_on", "PUBLIC", "Billing", "PUBLIC"),
        ("self", "mentors", "PUBLIC", "Sam", "PUBLIC"),
    ]
    assert next(e["note"] for e in low["edges"] if e["relation"] == "works_on") == "since May"
    high = extensions.graph_node(
        OperatorView.open(store, "CONFIDENTIAL", "ops"), {"agent": "a", "name": "Sam"}
    )
    assert [o["level"] for o in high["node"]["observations"]] == ["PUBLIC", "CONFIDENTIAL"]
    assert edges(high) == [
        ("in", "pays", "CONFIDENTIAL", "Payroll", "CONFIDENTIAL"),
        ("out", "audits", "CONFIDENTIAL", "Billing", "PUBLIC"),
        ("out", "works_on", "PUBLIC", "Billing", "PUBLIC"),
        ("self", "mentors", "PUBLIC", "Sam", "PUBLIC"),
    ]
    assert high["truncated"] is False
    view = OperatorView.open(store, "INTERNAL", "ops")
    with pytest.raises(sm.NotFound) as above:
        extensions.graph_node(view, {"agent": "a", "name": "Secret"})
    with pytest.raises(sm.NotFound) as missing:
        extensions.graph_node(view, {"agent": "a", "name": "Nobody"})
    assert str(above.value) == str(missing.value)  # above the clearance and missing read the same
    for params in ({"agent": "a"}, {"name": "Sam"}, {"agent": "a", "name": "bad\x00name"}):
        with pytest.raises(sm.ValidationError):
            extensions.graph_node(view, params)
