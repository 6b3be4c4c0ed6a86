"""Tool specs of the knowledge graph: zeroclaw's ``knowledge`` and the ``mcp-memory`` profile.

The ``mcp-memory`` profile has exactly the tool names and argument shapes of
the official MCP memory server (``@modelcontextprotocol/server-memory``), so
a client configured for it works by changing only the command; ``read_graph``
also accepts an optional ``cursor`` to page (its answer is bounded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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


def _string(name: str, description: str) -> Param:
    """An optional string argument of the ``knowledge`` tool."""
    return Param(name, "json", description, schema={"type": "string"})


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
        _string("name", "The node's name (capture, neighbors, suggest)."),
        _string("type", "The node's type, e.g. person, project, decision (capture)."),
        _string("content", "A description of the node (capture)."),
        Param("tags", "tags", "Labels for the node (capture)."),
        Param("observations", "json", "Facts to attach to the node (capture).", schema=_STRINGS),
        Param("query", "query", "Words to search for (search)."),
        _string("from", "Source node name (relate)."),
        _string("to", "Target node name (relate)."),
        _string("relation", "Relation type in active voice, e.g. manages, depends_on (relate)."),
        _string("note", "Why or since when the relation holds (relate)."),
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


def _no_texts(args: dict[str, Any]) -> Iterable[object]:
    """A deletion stores no text, so the scanner has nothing to read."""
    return ()


def _per_entity(field: str, entity: str, field_description: str) -> dict[str, Any]:
    """The JSON Schema of one entity's observations: its name and an array of strings under ``field``."""
    return {
        "type": "object",
        "properties": {
            "entityName": {"type": "string", "description": entity},
            field: {**_STRINGS, "description": field_description},
        },
        "required": ["entityName", field],
    }


def _write(
    name: str,
    description: str,
    argument: tuple[str, str, dict[str, Any]],
    texts: Callable[[dict[str, Any]], Iterable[object]],
) -> ToolSpec:
    """An mcp-memory write: one required argument (name, description, item schema), an array of items."""
    arg_name, arg_description, items = argument
    schema = {"type": "array", "items": items}
    return ToolSpec(
        name,
        MCP_MEMORY,
        description,
        (Param(arg_name, "json", arg_description, required=True, schema=schema),),
        writes=True,
        texts=texts,
    )


MCP_MEMORY_TOOLS: tuple[ToolSpec, ...] = (
    _write(
        "create_entities",
        "Create multiple new entities in the knowledge graph. Returns the entities created as a JSON array "
        "(names that already exist are left unchanged and not returned). " + _LEVEL,
        ("entities", "Entities to create.", _ENTITY),
        _entity_texts,
    ),
    _write(
        "create_relations",
        "Create multiple new relations between entities in the knowledge graph. Relations should be in "
        "active voice. Returns the relations created as a JSON array (existing ones are not repeated). "
        + _LEVEL,
        ("relations", "Relations to create.", _RELATION),
        _relation_texts,
    ),
    _write(
        "add_observations",
        "Add new observations to existing entities in the knowledge graph. Returns "
        '[{"entityName", "addedObservations"}]; an entity that does not exist is NOT_FOUND. ' + _LEVEL,
        (
            "observations",
            "Observations to add, per entity.",
            _per_entity(
                "contents",
                "The name of the entity to add the observations to",
                "An array of observation contents to add",
            ),
        ),
        _observation_texts,
    ),
    _write(
        "delete_entities",
        "Delete multiple entities and their associated relations from the knowledge graph. Returns "
        '"Entities deleted successfully".',
        ("entityNames", "An array of entity names to delete", {"type": "string"}),
        _no_texts,
    ),
    _write(
        "delete_observations",
        "Delete specific observations from entities in the knowledge graph. "
        'Returns "Observations deleted successfully".',
        (
            "deletions",
            "Observations to delete, per entity.",
            _per_entity(
                "observations",
                "The name of the entity containing the observations",
                "An array of observations to delete",
            ),
        ),
        _no_texts,
    ),
    _write(
        "delete_relations",
        'Delete multiple relations from the knowledge graph. Returns "Relations deleted successfully".',
        ("relations", "An array of relations to delete", _RELATION),
        _no_texts,
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
