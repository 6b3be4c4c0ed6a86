"""The tools an agent is offered: names, descriptions, parameters — as data.

One ``ToolSpec`` per tool, grouped by profile. The JSON Schema of each tool
and the argument checks (``arguments.py``) are both derived from these
specs, so what the model is told and what the executor accepts cannot drift
apart. Descriptions are written for the model: what the tool does, that the
level is automatic, and exactly what it returns.
"""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError
from ..paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from ..validation import MAX_CATEGORY_CHARS, MAX_CONTEXT_CHARS, MAX_KEY_CHARS, MAX_TAGS
from .graph_specs import KNOWLEDGE, MCP_MEMORY_TOOLS
from .toolspec import MAX_TEXT_CHARS as MAX_TEXT_CHARS
from .toolspec import MCP_MEMORY as MCP_MEMORY
from .toolspec import PROFILES as PROFILES
from .toolspec import TRIGGERFISH as TRIGGERFISH
from .toolspec import ZEROCLAW as ZEROCLAW
from .toolspec import Param as Param
from .toolspec import ToolSpec as ToolSpec
from .toolspec import parameters_schema as parameters_schema

_LEVEL_NOTE = (
    "The classification level is set automatically to the session's current security level; "
    "you cannot choose it, and any classification or level argument is ignored."
)
_ERRORS = (
    'On failure returns {"error": {"code": "VALIDATION_ERROR" | "NOT_FOUND" | "POLICY_BLOCKED" | '
    '"STORAGE_ERROR", "message": "..."}}.'
)
# The two arguments of every paged listing (memory_list, memory_export).
_PAGING = (
    Param(
        "limit",
        "page",
        f"Memories per page, 1 to {MAX_PAGE_SIZE} (default {DEFAULT_PAGE_SIZE}).",
        default=DEFAULT_PAGE_SIZE,
    ),
    Param(
        "cursor",
        "cursor",
        "The next_cursor of the previous page, to continue after it; omit for the first page.",
    ),
)
_CUT = (
    'Answers are limited in size: an answer that had to be cut carries "truncated": true and, when more '
    'remains, a "next_cursor" to pass as cursor to continue.'
)
_RANKED_CURSOR = (
    "The next_cursor of a previous answer that was cut, with the same other arguments, to continue it; "
    "omit at first."
)
_KEY = "Short, descriptive, unique identifier of the memory, e.g. 'user-name' or 'project-deadline'."
_BATCH_NOTE = (
    "All or nothing: if any item is invalid or refused, nothing is saved and the error names the item's "
    "index (0-based). At most the store's batch maximum (10,000 by default) items per call."
)


def batch_items(fields: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of a batch tool's ``items``: objects with these fields (key and content required)."""
    return {
        "type": "array",
        "minItems": 1,
        "items": {"type": "object", "properties": fields, "required": ["key", "content"]},
    }


_KEY_SCHEMA = {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS}
_CONTENT_SCHEMA = {"type": "string", "minLength": 1}
_OCCURRED = (
    "When the thing this memory tells of happened (ISO 8601 with offset, e.g. 2025-03-01T18:30:00+01:00; "
    "a time without offset is UTC). Omit: now."
)
_CONTEXT = (
    f"Optional short text that situates the memory (at most {MAX_CONTEXT_CHARS} characters), e.g. the "
    "conversation turn it came from or a document's title: stored with it and used to find it, never shown as "
    "its content."
)
# A save's optional time and context, as tool parameters and as fields of a batch's items.
_WHEN_AND_CONTEXT = (Param("occurred_at", "time", _OCCURRED), Param("context", "context", _CONTEXT))
_WHEN_AND_CONTEXT_FIELDS: dict[str, dict[str, Any]] = {
    "occurred_at": {"type": "string", "format": "date-time", "description": _OCCURRED},
    "context": {"type": "string", "maxLength": MAX_CONTEXT_CHARS, "description": _CONTEXT},
}

TRIGGERFISH_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memory_save",
        TRIGGERFISH,
        "Save a fact, preference or piece of context to persistent memory so it survives across "
        "conversations and restarts. Saving an existing key replaces its content. "
        + _LEVEL_NOTE
        + " Do not store secrets (passwords, API keys, private keys): such writes are refused. "
        'Returns {"saved": true, "key": "...", "classification": "PUBLIC|INTERNAL|CONFIDENTIAL|RESTRICTED"}. '
        + _ERRORS,
        (
            Param("key", "key", _KEY, required=True),
            Param("content", "content", "The information to remember, as plain text.", required=True),
            Param(
                "tags", "tags", 'Optional labels for grouping and filtering, e.g. ["personal", "preference"].'
            ),
            *_WHEN_AND_CONTEXT,
        ),
        writes=True,
    ),
    ToolSpec(
        "memory_save_many",
        TRIGGERFISH,
        "Save several memories at once, in one step (like memory_save for each item; an existing key "
        "is replaced). " + _LEVEL_NOTE + " Secrets are refused. " + _BATCH_NOTE + " "
        'Returns {"saved": N, "memories": [{"saved": true, "key", "classification"}]} in the order given '
        '(a long list is cut, with "truncated": true; every item was saved). ' + _ERRORS,
        (
            Param(
                "items",
                "items",
                "The memories to save: objects with key, content and optional tags, occurred_at and context.",
                required=True,
                schema=batch_items(
                    {
                        "key": _KEY_SCHEMA,
                        "content": _CONTENT_SCHEMA,
                        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_TAGS},
                        **_WHEN_AND_CONTEXT_FIELDS,
                    }
                ),
            ),
        ),
        writes=True,
    ),
    ToolSpec(
        "memory_get",
        TRIGGERFISH,
        'Retrieve one memory by its exact key. Returns {"found": true, "key", "content", '
        '"classification", "tags", "updated_at"} or {"found": false, "key"} when no memory with '
        "that key is accessible at the session's current security level (a missing key and an "
        "inaccessible one look the same); a content too long for one answer is cut with a marker and "
        '"truncated": true. Use memory_search when you do not know the exact key. ' + _ERRORS,
        (Param("key", "key", "The exact key of the memory to retrieve.", required=True),),
    ),
    ToolSpec(
        "memory_search",
        TRIGGERFISH,
        "Search all accessible memories with natural-language keywords (full-text, word stems, any "
        'term may match; more matching terms rank higher). An empty query or "*" returns the most '
        'recently updated memories. Returns {"results": [{"key", "content", "classification", '
        '"tags", "score"}], "query"} best match first; results only include memories accessible '
        "at the session's current security level. " + _CUT + " " + _ERRORS,
        (
            Param("query", "query", "Keywords or a natural-language question.", required=True),
            Param("max_results", "count", "Maximum number of results, 1 to 100.", default=10),
            Param("cursor", "offset", _RANKED_CURSOR),
        ),
    ),
    ToolSpec(
        "memory_list",
        TRIGGERFISH,
        "List the memories accessible at the session's current security level, one page at a time "
        f"({DEFAULT_PAGE_SIZE} by default, ordered by key), optionally only those carrying an exact tag. "
        'Returns {"memories": [{"key", "content", "classification", "tags", "updated_at"}], '
        '"next_cursor": "..." | null}; when next_cursor is not null more memories exist: call again '
        'with cursor set to it (an answer cut to its size limit also says "truncated": true). '
        "Prefer memory_search to find something specific. " + _ERRORS,
        (
            Param("tag", "text", "Only list memories with exactly this tag."),
            *_PAGING,
            Param("occurred_since", "time", "Only memories that happened at or after this time (ISO 8601)."),
            Param("occurred_until", "time", "Only memories that happened at or before this time (ISO 8601)."),
        ),
    ),
    ToolSpec(
        "memory_delete",
        TRIGGERFISH,
        "Delete a memory by key. Only the version saved at the session's current security level can "
        "be deleted; it is hidden from every read but retained for audit. If a lower-level version "
        'of the same key exists it becomes visible again. Returns {"deleted": true, "key"}, or a '
        "NOT_FOUND error when there is no memory with that key at the current level. " + _ERRORS,
        (Param("key", "key", "The exact key of the memory to delete.", required=True),),
        writes=True,
    ),
)

_ZC_ERRORS = 'Invalid arguments or a refusal return {"error": {"code": "...", "message": "..."}}.'

ZEROCLAW_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memory_store",
        ZEROCLAW,
        "Store a fact, preference, or note in long-term memory. Use category 'core' for permanent "
        "facts, 'daily' for session notes, 'conversation' for chat context, or a custom category "
        "name. Storing an existing key replaces it. " + _LEVEL_NOTE + " Secrets are refused. "
        "Returns the text 'Stored memory: <key>'. " + _ZC_ERRORS,
        (
            Param(
                "key", "key", "Unique key for this memory (e.g. 'user_lang', 'project_stack').", required=True
            ),
            Param("content", "content", "The information to remember.", required=True),
            Param(
                "category",
                "category",
                "Memory category: 'core' (permanent), 'daily' (session), "
                "'conversation' (chat), or a custom name.",
                default="core",
            ),
            *_WHEN_AND_CONTEXT,
        ),
        writes=True,
    ),
    ToolSpec(
        "memory_store_many",
        ZEROCLAW,
        "Store several facts, preferences or notes at once (like memory_store for each item; an "
        "existing key is replaced). " + _LEVEL_NOTE + " Secrets are refused. " + _BATCH_NOTE + " "
        "Returns the text 'Stored N memories: <key>, <key>, ...'. " + _ZC_ERRORS,
        (
            Param(
                "items",
                "items",
                "The memories to store: objects with key, content and optional category, occurred_at and context.",
                required=True,
                schema=batch_items(
                    {
                        "key": _KEY_SCHEMA,
                        "content": _CONTENT_SCHEMA,
                        "category": {"type": "string", "minLength": 1, "maxLength": MAX_CATEGORY_CHARS},
                        **_WHEN_AND_CONTEXT_FIELDS,
                    }
                ),
            ),
        ),
        writes=True,
    ),
    ToolSpec(
        "memory_recall",
        ZEROCLAW,
        "Search long-term memory for relevant facts, preferences, or context accessible at the "
        "session's current security level. Give keywords, a time range (since/until), or both; with "
        "neither, the most recent memories are returned. Returns 'Found N memories:' followed by one "
        "line per memory, '- [category] key: content [NN%]', where NN% is relevance relative to the "
        "best match (omitted for time-ordered results), or 'No memories found.'. A listing too long for "
        "one answer ends with a line 'more: use cursor=<cursor>': the same call with cursor=<cursor> "
        "continues it. " + _ZC_ERRORS,
        (
            Param("query", "query", "Keywords or phrase to search for (optional if since/until is given)."),
            Param("limit", "count", "Maximum number of results, 1 to 100.", default=5),
            Param(
                "since",
                "time",
                "Only memories created at or after this time (ISO 8601 / RFC 3339, "
                "e.g. 2025-03-01T00:00:00Z).",
            ),
            Param("until", "time", "Only memories created at or before this time (ISO 8601 / RFC 3339)."),
            Param("cursor", "offset", _RANKED_CURSOR),
        ),
    ),
    ToolSpec(
        "memory_forget",
        ZEROCLAW,
        "Remove a memory by key (only the version at the session's current security level; it is "
        "retained for audit). Returns 'Forgot memory: <key>' or 'No memory found with key: <key>'. "
        + _ZC_ERRORS,
        (Param("key", "key", "The key of the memory to forget.", required=True),),
        writes=True,
    ),
    ToolSpec(
        "memory_export",
        ZEROCLAW,
        "Export the memories accessible at the session's current security level, optionally "
        f"filtered, one page at a time ({DEFAULT_PAGE_SIZE} by default, ordered by key). Returns "
        "'Exported N memories:' followed by one JSON object per line (JSON Lines) with key, content, "
        "classification, tags, category, agent_id, session_id, created_at, updated_at; or 'No memories "
        "found.'. When more exist, a last line 'more: use cursor=<cursor>' says how to get the next "
        "page (same filters, cursor=<cursor>); a page too long for one answer ends early with that line. "
        + _ZC_ERRORS,
        (
            Param("category", "category", "Only memories in this category."),
            Param("session_id", "text", "Only memories saved by this session id."),
            Param("since", "time", "Only memories created at or after this time (ISO 8601)."),
            Param("until", "time", "Only memories created at or before this time (ISO 8601)."),
            *_PAGING,
        ),
    ),
    ToolSpec(
        "memory_purge",
        ZEROCLAW,
        "Delete every memory that a given session saved, among this agent's memories at the "
        "current security level (they are retained for audit). Returns "
        "\"Purged N memories from session '<session_id>'\". " + _ZC_ERRORS,
        (Param("session_id", "text", "The session id whose memories to delete.", required=True),),
        writes=True,
    ),
)

ZEROCLAW_TOOLS = (*ZEROCLAW_TOOLS, KNOWLEDGE)
BY_PROFILE = {TRIGGERFISH: TRIGGERFISH_TOOLS, ZEROCLAW: ZEROCLAW_TOOLS, MCP_MEMORY: MCP_MEMORY_TOOLS}
TOOLS: dict[str, ToolSpec] = {spec.name: spec for tools in BY_PROFILE.values() for spec in tools}


def specs(profile: str = TRIGGERFISH, *, read_only: bool = False) -> tuple[ToolSpec, ...]:
    """The tools of a profile; writing tools are left out for read-only sessions."""
    if profile not in PROFILES:
        raise ValidationError(f"unknown profile {profile!r}; valid profiles are {', '.join(PROFILES)}")
    return tuple(spec for spec in BY_PROFILE[profile] if not (read_only and spec.writes))
