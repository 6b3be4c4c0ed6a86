"""The ``mcp-memory`` profile: the official MCP memory server's tools over the classified graph.

Answers are the official server's texts: created entities/relations and
added observations as the JSON array it returns (compact, not indented), the
three delete messages, and ``{"entities", "relations"}`` for reads.
``structured`` gives the structured content the official server sends with
each. Differences, all documented: ``read_graph`` is paged (at most 100
entities; ``"truncated": true`` and ``"next_cursor"`` when more remain);
``search_nodes`` ranks by words (stems), at most 100 entities; relation lists
in reads are capped at 500 and ``open_nodes`` opens at most 100 names (``"truncated": true``); an entity that does not
exist, or is not accessible, is NOT_FOUND for add_observations (the official
server also errors) and silently skipped by the deletes (as there).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ValidationError
from ..graph import checks
from ..graph.api import PAGE_EDGES, PAGE_NODES
from ..graph.mcp_memory import entity, relation
from ..graph.model import Edge, Node
from ..session import Session
from .knowledge import refuse_quarantine

MESSAGES = {
    "delete_entities": "Entities deleted successfully",
    "delete_observations": "Observations deleted successfully",
    "delete_relations": "Relations deleted successfully",
}
WRAPPED = {"create_entities": "entities", "create_relations": "relations", "add_observations": "results"}


def _json(value: Any) -> str:
    """The official server's JSON, compact: the same data, without its two-space indentation (which
    Python can only produce with its slow pure-Python encoder, several times the cost of the query)."""
    return json.dumps(value, ensure_ascii=False)


def _objects(value: Any, what: str) -> list[dict[str, Any]]:
    items = checks.check_batch(value, what)
    if not all(isinstance(item, dict) for item in items):
        raise ValidationError(f"each of {what} must be an object")
    return items


def _edges(value: Any) -> list[Any]:
    return [
        checks.edge_draft(r.get("from"), r.get("to"), r.get("relationType"))
        for r in _objects(value, "relations")
    ]


def _per_entity(value: Any, what: str, texts: str) -> list[tuple[str, tuple[str, ...]]]:
    return [
        (checks.check_name(i.get("entityName"), "entityName"), checks.check_observations(i.get(texts) or []))
        for i in _objects(value, what)
    ]


def _graph(nodes: list[Node], edges: list[Edge], cursor: str | None = None) -> str:
    shape: dict[str, Any] = {
        "entities": [entity(n) for n in nodes],
        "relations": [relation(e) for e in edges],
    }
    if len(edges) > PAGE_EDGES:
        shape["relations"] = shape["relations"][:PAGE_EDGES]
        shape["truncated"] = True
    if cursor is not None:
        shape["truncated"] = True
        shape["next_cursor"] = cursor
    return _json(shape)


def create_entities(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    refuse_quarantine(quarantine)
    graph = session.graph
    drafts = [
        graph.draft(i.get("name"), i.get("entityType"), "", (), i.get("observations") or [])
        for i in _objects(args["entities"], "entities")
    ]
    if any(d.type == "" for d in drafts):
        raise ValidationError("entityType is required")
    return _json([entity(n) for n, created in graph.write_nodes(drafts, merge=False) if created])


def create_relations(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    refuse_quarantine(quarantine)
    return _json(
        [relation(e) for e, created in session.graph.relate_many(_edges(args["relations"])) if created]
    )


def add_observations(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    refuse_quarantine(quarantine)
    added = session.graph.add_observations(_per_entity(args["observations"], "observations", "contents"))
    return _json([{"entityName": name, "addedObservations": texts} for name, texts in added])


def delete_entities(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    session.graph.delete_nodes(checks.check_names(args["entityNames"], "entityNames"))
    return MESSAGES["delete_entities"]


def delete_observations(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    session.graph.delete_observations(_per_entity(args["deletions"], "deletions", "observations"))
    return MESSAGES["delete_observations"]


def delete_relations(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    session.graph.delete_edges(_edges(args["relations"]))
    return MESSAGES["delete_relations"]


def read_graph(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    page = session.graph.read(args.get("cursor"))
    return _graph(list(page.nodes), list(page.edges), page.cursor)


def search_nodes(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    hits, edges = session.graph.search_subgraph(args["query"], 100, edge_limit=PAGE_EDGES + 1)
    return _graph([h.node for h in hits], edges)


def open_nodes(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    names = checks.check_names(args["names"])
    nodes, edges = session.graph.open(names[:PAGE_NODES], edge_limit=PAGE_EDGES + 1)
    answer = _graph(nodes, edges)
    if len(names) > PAGE_NODES:  # at most one page of entities per answer, like read_graph
        shape = json.loads(answer)
        shape["truncated"] = True
        answer = _json(shape)
    return answer


_UNPARSED: Any = object()


def structured(name: str, text: str, data: Any = _UNPARSED) -> dict[str, Any] | None:
    """The structured content the official server sends with ``text`` (None for an error or plain text).

    ``data`` is ``text`` already parsed, when the caller has it (a search answer is tens of kilobytes:
    parsing it twice per call showed in the stdio server's profile).
    """
    if name in MESSAGES and text == MESSAGES[name]:
        return {"success": True, "message": text}
    if data is _UNPARSED:
        try:
            data = json.loads(text)
        except ValueError:
            return None
    if name in WRAPPED and isinstance(data, list):
        return {WRAPPED[name]: data}
    return data if isinstance(data, dict) and "error" not in data else None


HANDLERS = {
    f.__name__: f
    for f in (
        create_entities,
        create_relations,
        add_observations,
        delete_entities,
        delete_observations,
        delete_relations,
        read_graph,
        search_nodes,
        open_nodes,
    )
}
