"""Tool specs of the knowledge graph: zeroclaw's ``knowledge`` and the ``mcp-memory`` profile.

The ``mcp-memory`` profile has exactly the tool names and argument shapes of
the official MCP memory server (``@modelcontextprotocol/server-memory``), so
a client configured for it works by changing only the command; ``read_graph``
also accepts an optional ``cursor`` to page (its answer is bounded).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .toolspec import MCP_MEMORY, ZEROCLAW, Param, ToolSpec


@dataclass(frozen=True, slots=True)
class GraphWrite:
    """What a graph write would store, for the policy gate: its text fields (scanned one by one)."""

    values: tuple[object, ...]

    def texts(self) -> tuple[object, ...]:
        return self.values

    def arguments(self) -> dict[str, Any]:
        return {"texts": [v for v in self.values if isinstance(v, str)]}


_LEVEL = (
    "The classification level of what is written is set automatically to the conversation's current "
    "security level; you only ever see what is at or below it."
)
_STRINGS = {"type": "array", "items": {"type": "string"}}
_CUT = (
    'An answer is limited in size: when it was cut or more remain it carries "truncated": true and, to '
    'continue, a "next_cursor" to pass as cursor; an entity shown without some of its observations says '
    'how many in "omittedObservations".'
)
_ENTITY = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The name of the entity"},
        "entityType": {"type": "string", "description": "The type of the entity"},
        "observations": {
            **_STRINGS,
            "description": "An array of observation contents associated with the entity",
        },
    },
    "required": ["name", "entityType", "observations"],
}
_RELATION = {
    "type": "object",
    "properties": {
        "from": {"type": "string", "description": "The name of the entity where the relation starts"},
        "to": {"type": "string", "description": "The name of the entity where the relation ends"},
        "relationType": {"type": "string", "description": "The type of the relation"},
    },
    "required": ["from", "to", "relationType"],
}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else None


def _knowledge_texts(args: dict[str, Any]) -> Iterable[object]:
    return (
        args.get("name"),
        args.get("type"),
        args.get("content"),
        args.get("relation"),
        args.get("note"),
        args.get("from"),
        args.get("to"),
        *_items(args.get("observations")),
        *_items(args.get("tags")),
    )


def _entity_texts(args: dict[str, Any]) -> Iterable[object]:
    for item in _items(args.get("entities")):
        yield _field(item, "name")
        yield _field(item, "entityType")
        yield from _items(_field(item, "observations"))


def _relation_texts(args: dict[str, Any]) -> Iterable[object]:
    for item in _items(args.get("relations")):
        yield from (_field(item, "from"), _field(item, "to"), _field(item, "relationType"))


def _observation_texts(args: dict[str, Any]) -> Iterable[object]:
    for item in _items(args.get("observations")):
        yield _field(item, "entityName")
        yield from _items(_field(item, "contents"))


KNOWLEDGE_ACTIONS = ("capture", "search", "relate", "neighbors", "stats", "suggest")

KNOWLEDGE: ToolSpec = ToolSpec(
    "knowledge",
    ZEROCLAW,
    "Long-term knowledge graph: named nodes (people, projects, decisions, ...) with observations, and "
    "typed directed relations between them. Capture is always explicit. Returns plain text, per action: "
    'capture{name, type?, content?, tags?, observations?} creates or updates a node -> "Captured node: <name> '
    '[<type>]"; search{query, limit?} ranks nodes by words -> "Found N nodes:" then "- [type] name: '
    'text [NN%]" lines, or "No nodes found."; relate{from, to, relation, note?} -> "Related: a --relation--> b"; '
    'neighbors{name, depth? 1-3, limit?} -> "Found N neighbors of <name>:" lines; stats -> counts; '
    "suggest{name, limit?} -> nodes sharing neighbours or words, not yet linked. A node that does not exist "
    '(or is not accessible) answers "No node found with name: <name>". A listing too long for one answer '
    'ends with "more: use cursor=<cursor>": call again with that cursor. ' + _LEVEL,
    (
        Param(
            "action",
            "json",
            "What to do.",
            required=True,
            schema={"type": "string", "enum": list(KNOWLEDGE_ACTIONS)},
        ),
        Param("name", "json", "The node's name (capture, neighbors, suggest).", schema={"type": "string"}),
        Param(
            "type",
            "json",
            "The node's type, e.g. person, project, decision (capture).",
            schema={"type": "string"},
        ),
        Param("content", "json", "A description of the node (capture).", schema={"type": "string"}),
        Param("tags", "tags", "Labels for the node (capture)."),
        Param("observations", "json", "Facts to attach to the node (capture).", schema=_STRINGS),
        Param("query", "query", "Words to search for (search)."),
        Param("from", "json", "Source node name (relate).", schema={"type": "string"}),
        Param("to", "json", "Target node name (relate).", schema={"type": "string"}),
        Param(
            "relation",
            "json",
            "Relation type in active voice, e.g. manages, depends_on (relate).",
            schema={"type": "string"},
        ),
        Param("note", "json", "Why or since when the relation holds (relate).", schema={"type": "string"}),
        Param(
            "depth",
            "json",
            "How many steps to expand, 1 to 3 (neighbors).",
            schema={"type": "integer", "minimum": 1, "maximum": 3},
        ),
        Param("limit", "count", "Maximum number of results, 1 to 100.", default=10),
        Param(
            "cursor",
            "offset",
            "The cursor of a previous answer's last line 'more: use cursor=<cursor>' (search, neighbors, "
            "suggest), with the same other arguments, to continue it.",
        ),
    ),
    write_actions=frozenset({"capture", "relate"}),
    texts=_knowledge_texts,
)

MCP_MEMORY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "create_entities",
        MCP_MEMORY,
        "Create multiple new entities in the knowledge graph. Returns the entities created as a JSON array "
        "(names that already exist are left unchanged and not returned). " + _LEVEL,
        (
            Param(
                "entities",
                "json",
                "Entities to create.",
                required=True,
                schema={"type": "array", "items": _ENTITY},
            ),
        ),
        writes=True,
        texts=_entity_texts,
    ),
    ToolSpec(
        "create_relations",
        MCP_MEMORY,
        "Create multiple new relations between entities in the knowledge graph. Relations should be in "
        "active voice. Returns the relations created as a JSON array (existing ones are not repeated). "
        + _LEVEL,
        (
            Param(
                "relations",
                "json",
                "Relations to create.",
                required=True,
                schema={"type": "array", "items": _RELATION},
            ),
        ),
        writes=True,
        texts=_relation_texts,
    ),
    ToolSpec(
        "add_observations",
        MCP_MEMORY,
        "Add new observations to existing entities in the knowledge graph. Returns "
        '[{"entityName", "addedObservations"}]; an entity that does not exist is NOT_FOUND. ' + _LEVEL,
        (
            Param(
                "observations",
                "json",
                "Observations to add, per entity.",
                required=True,
                schema={
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "entityName": {
                                "type": "string",
                                "description": "The name of the entity to add the observations to",
                            },
                            "contents": {
                                **_STRINGS,
                                "description": "An array of observation contents to add",
                            },
                        },
                        "required": ["entityName", "contents"],
                    },
                },
            ),
        ),
        writes=True,
        texts=_observation_texts,
    ),
    ToolSpec(
        "delete_entities",
        MCP_MEMORY,
        "Delete multiple entities and their associated relations from the knowledge graph. Returns "
        '"Entities deleted successfully".',
        (Param("entityNames", "json", "An array of entity names to delete", required=True, schema=_STRINGS),),
        writes=True,
        texts=lambda args: (),
    ),
    ToolSpec(
        "delete_observations",
        MCP_MEMORY,
        "Delete specific observations from entities in the knowledge graph. "
        'Returns "Observations deleted successfully".',
        (
            Param(
                "deletions",
                "json",
                "Observations to delete, per entity.",
                required=True,
                schema={
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "entityName": {
                                "type": "string",
                                "description": "The name of the entity containing the observations",
                            },
                            "observations": {**_STRINGS, "description": "An array of observations to delete"},
                        },
                        "required": ["entityName", "observations"],
                    },
                },
            ),
        ),
        writes=True,
        texts=lambda args: (),
    ),
    ToolSpec(
        "delete_relations",
        MCP_MEMORY,
        'Delete multiple relations from the knowledge graph. Returns "Relations deleted successfully".',
        (
            Param(
                "relations",
                "json",
                "An array of relations to delete",
                required=True,
                schema={"type": "array", "items": _RELATION},
            ),
        ),
        writes=True,
        texts=lambda args: (),
    ),
    ToolSpec(
        "read_graph",
        MCP_MEMORY,
        'Read the knowledge graph, one bounded page at a time. Returns {"entities", "relations"}: at most '
        "100 entities (by name) and the relations from them. " + _CUT,
        (
            Param(
                "cursor", "json", "Optional: the next_cursor of the previous page.", schema={"type": "string"}
            ),
        ),
    ),
    ToolSpec(
        "search_nodes",
        MCP_MEMORY,
        "Search for nodes in the knowledge graph based on a query (words of entity names, types and "
        'observations; best matches first, at most 100). Returns {"entities", "relations"} with the '
        "relations touching them. " + _CUT,
        (
            Param(
                "query",
                "query",
                "The search query to match against entity names, types, and observation content",
                required=True,
            ),
            Param("cursor", "offset", "Optional: the next_cursor of a previous answer, with the same query."),
        ),
    ),
    ToolSpec(
        "open_nodes",
        MCP_MEMORY,
        "Open specific nodes in the knowledge graph by their names (at most 100 per answer). Returns "
        '{"entities", "relations"} with the relations touching them. ' + _CUT,
        (
            Param("names", "json", "An array of entity names to retrieve", required=True, schema=_STRINGS),
            Param("cursor", "offset", "Optional: the next_cursor of a previous answer, with the same names."),
        ),
    ),
)
