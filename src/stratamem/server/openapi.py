"""The OpenAPI 3.1 description of the REST API, written from ``stratamem.shapes``, and a docs page.

Written by hand rather than generated so that the documented bodies are
exactly the tools' JSON shapes (CONTRACT section 8), not a framework's
rendering of them. The ``/docs`` page that shows it is ``ui.py``.
"""

from __future__ import annotations

import json
from typing import Any

from ..validation import MAX_CONTEXT_CHARS
from . import openapi_turns
from .mcp_tools import server_version
from .openapi_parts import COMPARTMENT, LABEL, LEVEL, TAGS, TIME
from .openapi_parts import array as _array
from .openapi_parts import obj as _obj
from .openapi_parts import op as _op
from .openapi_parts import path as _path
from .openapi_parts import query as _query
from .openapi_parts import ref as _ref
from .openapi_parts import response as _json
from .rest import AUDIT_QUERY, LIST_QUERY, SEARCH_QUERY, TOOLS_QUERY

CUT = {
    "const": True,
    "description": "Present when the answer was cut to the server's max_answer_chars; next_cursor continues it.",
}

# The fields every answer shows of a memory, in this order.
# a save's optional time and context (tools/specs.py describes them to the model)
WHEN_AND_CONTEXT: dict[str, Any] = {
    "occurred_at": {**TIME, "description": "When it happened (ISO 8601; without offset: UTC). Default: now."},
    "context": {
        "type": "string",
        "maxLength": MAX_CONTEXT_CHARS,
        "description": "Text that situates the memory: stored with it and used for its embedding, never returned.",
    },
}
MEMORY: dict[str, Any] = {
    "key": {"type": "string"},
    "content": {"type": "string"},
    "classification": LEVEL,
    "compartments": {**_array(COMPARTMENT), "description": "The label's compartments (only when any)"},
    "tags": TAGS,
}

SCHEMAS: dict[str, Any] = {
    "Error": _obj(
        ["error"],
        error=_obj(
            ["code", "message"],
            code={
                "type": "string",
                "enum": [
                    "VALIDATION_ERROR",
                    "NOT_FOUND",
                    "POLICY_BLOCKED",
                    "STORAGE_ERROR",
                    "UNAUTHENTICATED",
                    "LIMIT_EXCEEDED",
                    "TURN_STATE",
                ],
            },
            message={"type": "string"},
        ),
    ),
    "Session": _obj(
        ["id", "agent_id", "taint", "clearance", "peers", "created_at"],
        id={"type": "string"},
        agent_id={"type": "string"},
        taint=LEVEL,
        clearance=LEVEL,
        label=LABEL,
        clearance_label=LABEL,
        peers=_array({"type": "string"}),
        created_at=TIME,
        taint_history=_array(_ref("TaintEvent")),
    ),
    "TaintEvent": _obj(
        ["time", "previous", "new", "reason", "source"],
        time=TIME,
        previous=LEVEL,
        new=LEVEL,
        previous_label=LABEL,
        new_label=LABEL,
        reason={"type": "string"},
        source={"type": ["string", "null"]},
    ),
    "SessionCreate": {
        "type": "object",
        "properties": {
            "clearance": {
                **LEVEL,
                "description": "Cap the session below the token's clearance (never above it).",
            }
        },
    },
    "Escalate": _obj(["level"], level=LEVEL, reason={"type": "string"}),
    "Enter": _obj(["compartment"], compartment=COMPARTMENT, reason={"type": "string"}),
    "MemorySave": _obj(
        ["key", "content"],
        key={"type": "string", "minLength": 1, "maxLength": 256},
        content={"type": "string", "minLength": 1},
        tags=TAGS,
        **WHEN_AND_CONTEXT,
    ),
    "MemoryBatch": _obj(
        ["items"],
        items={"type": "array", "minItems": 1, "items": _ref("MemorySave")},
    ),
    "SavedBatch": _obj(
        ["saved", "memories"],
        saved={"type": "integer", "minimum": 1},
        memories=_array(_ref("Saved")),
    ),
    "MemoryContent": _obj(
        ["content"], content={"type": "string", "minLength": 1}, tags=TAGS, **WHEN_AND_CONTEXT
    ),
    "Saved": _obj(
        ["saved", "key", "classification"],
        saved={"const": True},
        key={"type": "string"},
        classification=LEVEL,
        compartments=MEMORY["compartments"],
    ),
    "Memory": _obj(
        ["found", "key", "content", "classification", "tags", "updated_at"],
        found={"const": True},
        **MEMORY,
        updated_at=TIME,
        occurred_at=TIME,
    ),
    "NotFound": _obj(["found", "key"], found={"const": False}, key={"type": "string"}),
    "SearchRequest": _obj(
        ["query"],
        query={"type": "string"},
        max_results={"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
        cursor={"type": "string", "description": "The next_cursor of a cut answer, with the same query."},
    ),
    "SearchResults": _obj(
        ["results", "query"],
        query={"type": "string"},
        results=_array(
            _obj(
                ["key", "content", "classification", "tags", "score"],
                **MEMORY,
                occurred_at=TIME,
                score={"type": "number"},
            )
        ),
        truncated=CUT,
        next_cursor={"type": "string", "description": "Present when the answer was cut: pass as cursor."},
    ),
    "Listing": _obj(
        ["memories", "next_cursor"],
        memories=_array(
            _obj(
                ["key", "content", "classification", "tags", "updated_at"],
                **MEMORY,
                updated_at=TIME,
                occurred_at=TIME,
            )
        ),
        next_cursor={
            "type": ["string", "null"],
            "description": "Pass as ?cursor= for the next page; null on the last page.",
        },
        truncated=CUT,
    ),
    "Deleted": _obj(["deleted", "key"], deleted={"const": True}, key={"type": "string"}),
    "AuditEvents": _obj(
        ["events"],
        events=_array(
            _obj(
                ["seq", "time", "operation", "taint", "outcome"],
                seq={"type": "integer"},
                time=TIME,
                session_id={"type": ["string", "null"]},
                agent_id={"type": ["string", "null"]},
                taint=LEVEL,
                operation={"type": "string"},
                keys=TAGS,
                levels=_array(LEVEL),
                lineage_ids=TAGS,
                outcome={"type": "string"},
                detail={"type": "object"},
                hash={"type": "string"},
            )
        ),
        more={"type": "boolean"},
        next_after={"type": "integer"},
        next_before={"type": "integer"},
    ),
    "Verify": _obj(["intact"], intact={"type": "boolean"}, first_bad_seq={"type": "integer"}),
    "Health": _obj(["status", "version"], status={"const": "ok"}, version={"type": "string"}),
    "Tools": _obj(["tools"], tools=_array({"type": "object"})),
    "Readiness": _obj(
        ["status", "checks"],
        status={"enum": ["ready", "not ready"]},
        checks=_obj(
            ["database", "migrations", "model"],
            **{name: _ref("ReadinessCheck") for name in ("database", "migrations", "model")},
        ),
    ),
    "ReadinessCheck": _obj(
        ["ok", "detail"],
        ok={"type": "boolean"},
        detail={"type": "string"},
        recorded={"type": "integer", "description": "migrations: the schema version the store records"},
        expected={"type": "integer", "description": "migrations: the version this code writes"},
    ),
}
# Prometheus' text format: what a scrape of /metrics answers
METRICS_TEXT = {
    "description": "Counters, histograms and gauges (no content, keys or tokens; agent names only if enabled)",
    "content": {"text/plain; version=0.0.4": {"schema": {"type": "string"}}},
}

SID = _path("session_id", "A session id from POST /v1/sessions.")
KEY = _path("key", "The memory key, percent-encoded.")
WRITE_ERRORS = ("400", "401", "403", "404", "503")  # a write may also be refused by policy (403)


def document() -> dict[str, Any]:
    """The OpenAPI document served at ``/openapi.json``."""
    s = "/v1/sessions/{session_id}"
    session_ok = ("200", "The session", _ref("Session"))
    paths = {
        "/v1/health": {
            "get": _op(
                "Liveness and storage readiness (no token needed)",
                ("200", "Serving", _ref("Health")),
                errors=("503",),
                public=True,
            )
        },
        "/v1/health/ready": {
            "get": _op(
                "Readiness: database reachable, migrations current, model loaded (no token needed)",
                ("200", "Ready to serve", _ref("Readiness")),
                errors=(),
                public=True,
                extra={"503": _json(_ref("Readiness"), "Not ready: the failing checks are named")},
            )
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics (open on a loopback address, else an operator token; "
                "[server] metrics)",
                "responses": {
                    "200": METRICS_TEXT,
                    "401": _json(_ref("Error"), "UNAUTHENTICATED: off loopback, no operator token"),
                    "403": _json(_ref("Error"), "POLICY_BLOCKED: the token is not an operator's"),
                },
            }
        },
        "/v1/tools": {
            "get": _op(
                "Tool definitions for a model provider",
                ("200", "Tools", _ref("Tools")),
                params=[
                    _query("dialect", TOOLS_QUERY["dialect"].schema(), "Format (default openai)"),
                    _query("profile", TOOLS_QUERY["profile"].schema(), "Profile (default: the server's)"),
                ],
                errors=("400", "401"),
            )
        },
        "/v1/sessions": {
            "post": _op(
                "Open a session for this token's agent, at PUBLIC",
                ("201", "The new session", _ref("Session")),
                body="SessionCreate",
                errors=("400", "401", "403", "503"),
            )
        },
        s: {"get": _op("A session with its taint history", session_ok, params=[SID])},
        f"{s}/escalate": {
            "post": _op(
                "Raise the session's taint (never lowers; refused above the clearance)",
                session_ok,
                body="Escalate",
                params=[SID],
                errors=("400", "401", "403", "404", "503"),
            )
        },
        f"{s}/enter": {
            "post": _op(
                "Enter a compartment: add it to the session's taint (never leaves it; refused, as a "
                "level above the clearance is, when the clearance lacks it)",
                session_ok,
                body="Enter",
                params=[SID],
                errors=("400", "401", "403", "404", "503"),
            )
        },
        f"{s}/reset": {
            "post": _op(
                "A new session at PUBLIC for the same agent (the only way down)",
                ("201", "The new session", _ref("Session")),
                params=[SID],
            )
        },
        f"{s}/memories": {
            "get": _op(
                "memory_list: one page of the visible memories",
                ("200", "Memories", _ref("Listing")),
                params=[
                    SID,
                    _query("tag", {"type": "string"}, "Only memories with exactly this tag"),
                    _query("limit", LIST_QUERY["limit"].schema(), "Memories per page"),
                    _query("cursor", {"type": "string"}, "next_cursor of the previous page"),
                    _query("occurred_since", TIME, "Only memories that happened at or after this time"),
                    _query("occurred_until", TIME, "Only memories that happened at or before this time"),
                ],
            ),
            "post": _op(
                "memory_save at the session's live taint",
                ("200", "Saved", _ref("Saved")),
                body="MemorySave",
                params=[SID],
                errors=WRITE_ERRORS,
            ),
        },
        f"{s}/memories:batch": {
            "post": _op(
                "memory_save_many: several memories in one transaction at the live taint, all or nothing "
                "(a bad or refused item is named by its 0-based index; over the store's max_batch is a 400)",
                ("200", "Saved, in the order given", _ref("SavedBatch")),
                body="MemoryBatch",
                params=[SID],
                errors=("400", "401", "403", "404", "413", "503"),
            ),
        },
        f"{s}/memories/{{key}}": {
            "get": _op(
                "memory_get",
                ("200", "Found", _ref("Memory")),
                params=[SID, KEY],
                errors=("400", "401", "503"),
                extra={
                    "404": _json(
                        {"oneOf": [_ref("NotFound"), _ref("Error")]},
                        "No visible memory with that key (the tool's shape), or no session",
                    )
                },
            ),
            "put": _op(
                "memory_save under this key",
                ("200", "Saved", _ref("Saved")),
                body="MemoryContent",
                params=[SID, KEY],
                errors=WRITE_ERRORS,
            ),
            "delete": _op(
                "memory_delete: the own version at exactly the live taint",
                ("200", "Deleted", _ref("Deleted")),
                params=[SID, KEY],
                errors=WRITE_ERRORS,
            ),
        },
        f"{s}/search": {
            "get": _op(
                "memory_search",
                ("200", "Results, best first", _ref("SearchResults")),
                params=[
                    SID,
                    _query("query", {"type": "string"}, "Keywords; empty or * = most recent"),
                    _query("max_results", SEARCH_QUERY["max_results"].schema(), "Hits at most"),
                    _query("cursor", {"type": "string"}, "next_cursor of a cut answer, same query"),
                ],
            ),
            "post": _op(
                "memory_search (long queries)",
                ("200", "Results, best first", _ref("SearchResults")),
                body="SearchRequest",
                params=[SID],
            ),
        },
        f"{s}/graph/{{tool}}": {
            "post": {
                **_op(
                    "Knowledge graph: one mcp-memory tool (create_entities, create_relations, add_observations, "
                    "delete_entities, delete_observations, delete_relations, read_graph, search_nodes, open_nodes); "
                    "the body is its arguments, the answer its structured content",
                    ("200", "The tool's structured answer", {"type": "object"}),
                    params=[SID, _path("tool", "The mcp-memory tool name")],
                    errors=WRITE_ERRORS,
                ),
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
            }
        },
        "/v1/mcp-sessions/{mcp_session_id}": {
            "get": _op(
                "The stratamem session an MCP-over-HTTP connection acts in",
                session_ok,
                params=[_path("mcp_session_id", "The mcp-session-id header of the MCP connection")],
            )
        },
        "/v1/audit": {
            "get": _op(
                "Audit events this token could observe: its own sessions' events up to its "
                "clearance (operators: every session, and operator actions at RESTRICTED)",
                ("200", "A page of events, oldest first", _ref("AuditEvents")),
                params=[
                    _query("limit", AUDIT_QUERY["limit"].schema(), "Events at most"),
                    _query(
                        "after",
                        AUDIT_QUERY["after"].schema(),
                        "Page forward: events after this seq (next_after)",
                    ),
                    _query(
                        "before",
                        AUDIT_QUERY["before"].schema(),
                        "Without after: the newest events before this seq (next_before)",
                    ),
                    _query("lineage", {"type": "string"}, "Only this lineage id"),
                ],
                errors=("400", "401", "503"),
            )
        },
        "/v1/audit/verify": {
            "get": _op(
                "Verify the audit hash chain", ("200", "Result", _ref("Verify")), errors=("401", "503")
            )
        },
    }
    paths.update(openapi_turns.paths(s, SID))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "stratamem",
            "version": server_version(),
            "description": (
                "Classified, persistent memory for AI agents. Memory endpoints answer with the same JSON "
                "as the agent tools (memory_save, memory_get, ...). Levels are never chosen by a request: "
                "memories are saved at the session's live taint, raised only with /escalate. MCP "
                "(streamable HTTP) is served at /mcp with the same bearer tokens."
            ),
        },
        "components": {
            "schemas": {**SCHEMAS, **openapi_turns.SCHEMAS},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": paths,
    }


def document_text() -> str:
    return json.dumps(document(), ensure_ascii=False)
