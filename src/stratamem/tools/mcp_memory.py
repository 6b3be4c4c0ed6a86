"""The ``mcp-memory`` profile: the official MCP memory server's tools over the classified graph.

Answers are the official server's texts: created entities/relations and
added observations as the JSON array it returns (compact, not indented), the
three delete messages, and ``{"entities", "relations"}`` for reads.
``structured`` gives the structured content the official server sends with
each. Differences, all documented: ``read_graph`` is paged (at most 100
entities; ``"truncated": true`` and ``"next_cursor"`` when more remain);
``search_nodes`` ranks by words (stems), at most 100 entities; relation lists
in reads are capped at 500 and ``open_nodes`` opens at most 100 names (``"truncated": true``
and a ``"next_cursor"``); an entity that does not exist, or is not accessible, is NOT_FOUND for
add_observations (the official server also errors) and silently skipped by the deletes (as there).

Every answer fits the store's ``max_answer_chars`` (``tools.fit``): a read
over it keeps the leading entities with their relations, says
``"truncated": true`` and gives the ``next_cursor`` to pass as ``cursor``
(``search_nodes`` and ``open_nodes`` take one too); an entity too large on its
own keeps the observations that fit and counts the rest in
``"omittedObservations"``. A write's array over it becomes its structured
form, ``{"entities" | "relations" | "results": [...], "truncated": true, "omitted": N}``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..graph import checks
from ..graph.api import PAGE_EDGES, PAGE_NODES
from ..graph.mcp_memory import entity, relation
from ..graph.model import Edge, Node
from ..paging import decode_offset, encode_offset
from . import fit
from .knowledge import refuse_quarantine

if TYPE_CHECKING:
    from ..session import Session

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


def _whole(nodes: list[Node], edges: list[Edge], cursor: str | None, truncated: bool) -> dict[str, Any]:
    """The answer as it reads when it fits the budget (at most ``PAGE_EDGES`` relations)."""
    shape: dict[str, Any] = {
        "entities": [entity(n) for n in nodes],
        "relations": [relation(e) for e in edges[:PAGE_EDGES]],
    }
    if truncated or len(edges) > PAGE_EDGES or cursor is not None:
        shape["truncated"] = True
    if cursor is not None:
        shape["next_cursor"] = cursor
    return shape


def _units(groups: list[list[Node]], edges: list[Edge], *, from_only: bool) -> list[fit.Unit]:
    """One unit per group of nodes, each relation in the first unit it starts from (or touches)."""
    owner: dict[tuple[str, str], int] = {}
    for index, group in enumerate(groups):
        for node in group:
            owner.setdefault((node.agent_id, node.name), index)
    units = [fit.Unit([entity(n) for n in group]) for group in groups]
    for edge in edges[:PAGE_EDGES]:
        ends = [owner.get((edge.agent_id, edge.source))]
        if not from_only:
            ends.append(owner.get((edge.agent_id, edge.target)))
        placed = [i for i in ends if i is not None]
        if placed:
            units[min(placed)].relations.append(relation(edge))
    return units


def _by_name(nodes: list[Node]) -> list[list[Node]]:
    """Consecutive nodes of one name (the own agent's and its peers') as one group."""
    groups: list[list[Node]] = []
    for node in nodes:
        if groups and groups[-1][0].name == node.name:
            groups[-1].append(node)
        else:
            groups.append([node])
    return groups


def create_entities(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    refuse_quarantine(quarantine)
    graph = session.graph
    drafts = [
        graph.draft(i.get("name"), i.get("entityType"), "", (), i.get("observations") or [])
        for i in _objects(args["entities"], "entities")
    ]
    if any(d.type == "" for d in drafts):
        raise ValidationError("entityType is required")
    made = [entity(n) for n, created in graph.write_nodes(drafts, merge=False) if created]
    return _json(
        fit.written(made, WRAPPED["create_entities"], "observations", session.store.max_answer_chars)
    )


def create_relations(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    refuse_quarantine(quarantine)
    made = [relation(e) for e, created in session.graph.relate_many(_edges(args["relations"])) if created]
    return _json(fit.written(made, WRAPPED["create_relations"], None, session.store.max_answer_chars))


def add_observations(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    refuse_quarantine(quarantine)
    added = session.graph.add_observations(_per_entity(args["observations"], "observations", "contents"))
    made = [{"entityName": name, "addedObservations": texts} for name, texts in added]
    return _json(
        fit.written(made, WRAPPED["add_observations"], "addedObservations", session.store.max_answer_chars)
    )


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
    """One page by name; over the budget it ends after the last name that fits, its cursor that name."""
    page = session.graph.read(args.get("cursor"))
    nodes, edges = list(page.nodes), list(page.edges)
    groups = _by_name(nodes)

    def resume(shown: int) -> str | None:
        return groups[shown - 1][0].name if shown < len(groups) else page.cursor

    whole = _whole(nodes, edges, page.cursor, page.truncated)
    units = _units(groups, edges, from_only=True)
    return _json(fit.graph(units, session.store.max_answer_chars, resume, whole))


def search_nodes(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    """The best 100 entities from the cursor on (the same search, the first ones skipped), within the budget."""
    offset = _offset(args)
    found, edges = session.graph.search_subgraph(args["query"], 100, edge_limit=PAGE_EDGES + 1)
    hits = [h.node for h in found]
    units = _units([[n] for n in hits], edges, from_only=False)[offset:]
    if offset == 0:
        whole = _whole(hits, edges, None, False)
    else:  # a continuation: the later hits and the relations no earlier hit brought
        whole = {
            "entities": [e for u in units for e in u.entities],
            "relations": [r for u in units for r in u.relations],
            **({"truncated": True} if len(edges) > PAGE_EDGES else {}),
        }

    def resume(count: int) -> str | None:
        return encode_offset(offset + count) if count < len(units) else None

    return _json(fit.graph(units, session.store.max_answer_chars, resume, whole))


def open_nodes(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    """At most ``PAGE_NODES`` names from the cursor on; ``next_cursor`` names where the next answer starts."""
    names = checks.check_names(args["names"])
    offset = _offset(args)
    window = names[offset : offset + PAGE_NODES]
    nodes, edges = session.graph.open(window, edge_limit=PAGE_EDGES + 1)
    by_name: dict[str, list[Node]] = {}
    for node in nodes:
        by_name.setdefault(node.name, []).append(node)
    asked = [(offset + i + 1, by_name[name]) for i, name in enumerate(window) if name in by_name]
    after_window = offset + PAGE_NODES if len(names) > offset + PAGE_NODES else None

    def resume(count: int) -> str | None:
        end = asked[count - 1][0] if count < len(asked) else after_window
        return None if end is None else encode_offset(end)

    whole = _whole(nodes, edges, resume(len(asked)), False)
    units = _units([group for _, group in asked], edges, from_only=False)
    return _json(fit.graph(units, session.store.max_answer_chars, resume, whole))


def _offset(args: dict[str, Any]) -> int:
    cursor = args.get("cursor")
    return 0 if cursor is None else decode_offset(cursor)


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
