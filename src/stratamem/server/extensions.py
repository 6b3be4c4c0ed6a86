"""Console views over optional parts of a store: the usage ledger and the knowledge graph.

A store that lacks them answers ``{"available": false, "reason": ...}`` and
the page says "not available in this store". When present they are read the
same way as everything else in the console: the graph through a real session
of the agent at the console's clearance (``session.graph``), usage records
filtered to levels within the clearance; both reads are audited.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from ..errors import NotFound, ValidationError
from ..operator import OperatorView
from ..session import Session
from ..validation import parse_time

MAX_USAGE_RECORDS = 100_000
MAX_GRAPH_NODES = 200
MAX_NODE_EDGES = 500


def has_usage(store: Any) -> bool:
    return callable(getattr(store, "usage", None))


def has_graph(store: Any) -> bool:
    return hasattr(Session, "graph") and hasattr(store.backend, "graph")


def features(store: Any) -> dict[str, bool]:
    return {"usage": has_usage(store), "graph": has_graph(store)}


def _unavailable(what: str) -> dict[str, Any]:
    return {"available": False, "reason": f"{what} is not available in this store"}


def _time(params: Mapping[str, str], name: str) -> datetime | None:
    raw = params.get(name)
    return parse_time(raw, name, naive_is_utc=False) if raw else None


def usage(view: OperatorView, params: Mapping[str, str]) -> dict[str, Any]:
    """Cost and tokens per day and model, from usage records at levels within the clearance."""
    if not has_usage(view.store):
        return _unavailable("the usage ledger")
    agent = params.get("agent") or None
    records = view.store.usage(agent, _time(params, "since"), _time(params, "until"), MAX_USAGE_RECORDS)
    days: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"cost_usd": Decimal(0), "input_tokens": 0, "output_tokens": 0, "calls": 0}
    )
    for record in records:
        if record.level > view.clearance:
            continue
        row = days[(record.time.date().isoformat(), record.model)]
        row["cost_usd"] += Decimal(record.cost_usd)
        row["input_tokens"] += record.input_tokens
        row["output_tokens"] += record.output_tokens
        row["calls"] += 1
    rows = [
        {"day": day, "model": model, **{**v, "cost_usd": str(v["cost_usd"])}}
        for (day, model), v in sorted(days.items())
    ]
    view._audit("console.usage", agent, (), count=len(rows))
    return {"available": True, "rows": rows}


def _required(params: Mapping[str, str], name: str) -> str:
    value = params.get(name)
    if not value:
        raise ValidationError(f"{name} is required")
    return value


def graph(view: OperatorView, params: Mapping[str, str]) -> dict[str, Any]:
    """One page of an agent's knowledge graph as a session at the clearance sees it."""
    if not has_graph(view.store):
        return _unavailable("the knowledge graph")
    agent = _required(params, "agent")
    page = view.session_at(agent, view.clearance).graph.read(params.get("after") or None, MAX_GRAPH_NODES)
    return {
        "available": True,
        "nodes": [
            {
                "name": n.name,
                "type": n.type,
                "level": n.level.name,
                "content": n.content[:400],
                "agent_id": n.agent_id,
            }
            for n in page.nodes
        ],
        "edges": [
            {"source": e.source, "target": e.target, "relation": e.relation, "level": e.level.name}
            for e in page.edges
        ],
        "next": page.cursor,
        "truncated": page.truncated,
    }


def graph_node(view: OperatorView, params: Mapping[str, str]) -> dict[str, Any]:
    """One node as a session of the agent at the clearance sees it: observations, edges, neighbours, levels.

    Two reads of that session (the node with the edges touching it, then the
    nodes at their other ends), so nothing above the clearance is returned:
    an edge is visible only with both ends, an observation only within the
    level. A node that is missing or above the clearance is NOT_FOUND alike.
    """
    if not has_graph(view.store):
        return _unavailable("the knowledge graph")
    agent, name = _required(params, "agent"), _required(params, "name")
    graph = view.session_at(agent, view.clearance).graph
    found, edges = graph.open([name], edge_limit=MAX_NODE_EDGES)
    if not found:
        raise NotFound(f"no node of that name for agent {agent} at or below {view.clearance.name}")
    node = found[0]
    ends = sorted({e.target if e.source == node.name else e.source for e in edges} - {node.name})
    others = {n.name: n for n in graph.open(ends, edge_limit=0)[0]} if ends else {}
    others[node.name] = node
    listed = []
    for e in edges:
        direction = "self" if e.source == e.target else "out" if e.source == node.name else "in"
        end = others.get(e.target if direction == "out" else e.source)
        listed.append(
            {
                "direction": direction,
                "relation": e.relation,
                "note": e.note,
                "level": e.level.name,
                "neighbour": {"name": end.name, "type": end.type, "level": end.level.name} if end else None,
            }
        )
    return {
        "available": True,
        "node": {
            "name": node.name,
            "type": node.type,
            "level": node.level.name,
            "content": node.content,
            "tags": list(node.tags),
            "agent_id": node.agent_id,
            "updated_at": node.updated_at.isoformat(),
            "observations": [
                {"text": o.text, "level": o.level.name, "created_at": o.created_at.isoformat()}
                for o in node.observations
            ],
        },
        "edges": listed,
        "truncated": len(edges) >= MAX_NODE_EDGES,
    }
