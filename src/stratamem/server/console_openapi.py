"""The console API's entries in the OpenAPI document (merged in by ``app.build_app``).

Kept apart from ``openapi.py`` so the REST description stays one module; the
shapes are summarised (objects), the page is their main reader. The export
(JSON Lines, not JSON) is listed on ``/docs`` through its summary only.
"""

from __future__ import annotations

from typing import Any

from .openapi_parts import obj as _obj
from .openapi_parts import op as _op
from .openapi_parts import path as _path
from .openapi_parts import query as _query

CONSOLE_HEADER = {
    "name": "X-Stratamem-Console",
    "in": "header",
    "required": True,
    "schema": {"type": "string"},
    "description": "The console id from POST /v1/console/open",
}
AGENT = _path("agent", "An agent id")
REF = _path("ref", "A record's ref from a memories page")
PAGE = [
    _query("limit", {"type": "integer"}, "1..200, default 50"),
    _query("after", {"type": "string"}, "The next cursor of the previous page"),
]
OBJ = {"type": "object"}
ERR = ("400", "401", "403", "404", "503")
CONFIRM = {"type": "object", "required": ["confirm"], "properties": {"confirm": {"const": True}}}


def _view(summary: str, params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return _op(summary, ("200", "The page", OBJ), params=[CONSOLE_HEADER, *(params or [])], errors=ERR)


def _action(summary: str, params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    op = _view(summary, params)
    op["requestBody"] = {"required": True, "content": {"application/json": {"schema": CONFIRM}}}
    return op


def console_paths() -> dict[str, Any]:
    c = "/v1/console"
    opened = _obj(
        ["console", "principal", "clearance", "max_clearance", "expires_at"],
        console={"type": "string"},
        principal={"type": "string"},
        clearance={"type": "string"},
        max_clearance={"type": "string"},
        expires_at={"type": "string"},
        features=OBJ,
    )
    open_op = _op(
        "Open the operator console at a clearance (operator tokens only; audited)",
        ("201", "The console id", opened),
        errors=("400", "401", "403", "503"),
    )
    open_op["requestBody"] = {
        "required": False,
        "content": {
            "application/json": {
                "schema": _obj(
                    [],
                    clearance={
                        "type": "string",
                        "enum": ["PUBLIC", "INTERNAL", "CONFIDENTIAL", "RESTRICTED"],
                    },
                )
            }
        },
    }
    return {
        f"{c}/open": {"post": open_op},
        f"{c}/close": {"post": _view("Close the console")},
        f"{c}/agents": {"get": _view("Agents with live and deleted counts per level", PAGE)},
        f"{c}/agents/{{agent}}/memories": {
            "get": _view(
                "One agent's versions, every status, by key then level",
                [
                    AGENT,
                    *PAGE,
                    *(
                        _query(n, {"type": "string"}, d)
                        for n, d in (
                            ("level", "Only this level"),
                            ("status", "all | live | deleted | expired"),
                            ("tag", "Exactly this tag"),
                            ("category", "Exactly this category"),
                            ("text", "Substring of key or content"),
                        )
                    ),
                ],
            )
        },
        f"{c}/agents/{{agent}}/versions": {
            "get": _view(
                "Every version of one key within the clearance",
                [AGENT, _query("key", {"type": "string"}, "The key")],
            )
        },
        f"{c}/agents/{{agent}}/search": {
            "post": _view("Search as the agent at the clearance, with matched terms", [AGENT])
        },
        f"{c}/agents/{{agent}}/export": {
            "get": _view("Live versions within the clearance, as JSON Lines", [AGENT])
        },
        f"{c}/records/{{ref}}": {
            "get": _view(
                "One record with its lineage (audit events); the console's own reads counted in one row",
                [
                    REF,
                    _query("limit", {"type": "integer"}, "1..200, default 50"),
                    _query("before", {"type": "integer"}, "Older than"),
                    _query(
                        "console_reads",
                        {"type": "string", "enum": ["collapse", "show"]},
                        "collapse (default): only counted; show: listed with the other events",
                    ),
                ],
            )
        },
        f"{c}/records/{{ref}}/delete": {
            "post": _action("Soft-delete a version (the agent's own delete)", [REF])
        },
        f"{c}/records/{{ref}}/restore": {"post": _action("Restore a soft-deleted version", [REF])},
        f"{c}/sessions": {"get": _view("Sessions within the clearance with taint history", PAGE)},
        f"{c}/audit": {
            "get": _view(
                "Audit events within the clearance, newest first",
                [
                    _query("limit", {"type": "integer"}, "1..200"),
                    _query("before", {"type": "integer"}, "Older than"),
                ],
            )
        },
        f"{c}/audit/verify": {"post": _view("Verify the audit hash chain")},
        f"{c}/purge": {"post": _action("Purge old soft-deleted and expired records (console at RESTRICTED)")},
        f"{c}/usage": {"get": _view("Cost and tokens per day and model, when the store has a usage ledger")},
        f"{c}/graph": {"get": _view("One page of an agent's knowledge graph, when the store has one")},
        f"{c}/graph/node": {
            "get": _view(
                "One node as the agent sees it at the clearance: observations, neighbours, levels",
                [
                    _query("agent", {"type": "string"}, "An agent id"),
                    _query("name", {"type": "string"}, "The node's name"),
                ],
            )
        },
    }
