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

from ..errors import ValidationError
from ..operator import OperatorView
from ..session import Session
from ..validation import parse_time

MAX_USAGE_RECORDS = 100_000
MAX_GRAPH_NODES = 200


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


def graph(view: OperatorView, params: Mapping[str, str]) -> dict[str, Any]:
    """One page of an agent's knowledge graph as a session at the clearance sees it."""
    if not has_graph(view.store):
        return _unavailable("the knowledge graph")
    agent = params.get("agent")
    if not agent:
        raise ValidationError("agent is required")
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
