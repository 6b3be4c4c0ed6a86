"""The console API's entries in the OpenAPI document (merged in by ``app.build_app``).

Kept apart from ``openapi.py`` so the REST description stays one module; the
shapes are summarised (objects), the page is their main reader. The export
(JSON Lines, not JSON) is listed on ``/docs`` through its summary only.
"""

from __future__ import annotations

from typing import Any

from .console import QUERIES
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
REQUEST = _path("request_id", "A declassification request's id")
C = "/v1/console"


def _page(path: str) -> list[dict[str, Any]]:
    return [
        _query("limit", QUERIES[path]["limit"].schema(), "Entries per page"),
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
        f"{c}/agents": {"get": _view("Agents with live and deleted counts per level", _page(f"{C}/agents"))},
        f"{c}/agents/{{agent}}/memories": {
            "get": _view(
                "One agent's versions, every status, by key then level",
                [
                    AGENT,
                    *_page(f"{C}/agents/{{agent}}/memories"),
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
                    _query(
                        "before", QUERIES[f"{C}/records/{{ref}}"]["before"].schema(), "Lineage older than"
                    ),
                    _query("limit", QUERIES[f"{C}/records/{{ref}}"]["limit"].schema(), "Lineage events"),
                    _query(
                        "console_reads",
                        QUERIES[f"{C}/records/{{ref}}"]["console_reads"].schema(),
                        "collapse (default): the console's own reads only counted; show: listed with the other events",
                    ),
                ],
            )
        },
        f"{c}/records/{{ref}}/delete": {
            "post": _action("Soft-delete a version (the agent's own delete)", [REF])
        },
        f"{c}/records/{{ref}}/restore": {"post": _action("Restore a soft-deleted version", [REF])},
        f"{c}/sessions": {
            "get": _view(
                "Sessions within the clearance with taint history",
                [
                    *_page(f"{C}/sessions"),
                    _query("agent", {"type": "string"}, "Only this agent's"),
                    _query(
                        "one_shot",
                        QUERIES[f"{C}/sessions"]["one_shot"].schema(),
                        "hide (default): leave out the sessions CLI commands opened for themselves; show: list them",
                    ),
                ],
            )
        },
        f"{c}/audit": {
            "get": _view(
                "Audit events within the clearance, newest first",
                [
                    _query("limit", QUERIES[f"{C}/audit"]["limit"].schema(), "Events per page"),
                    _query("before", QUERIES[f"{C}/audit"]["before"].schema(), "Older than"),
                ],
            )
        },
        f"{c}/audit/verify": {"post": _view("Verify the audit hash chain")},
        f"{c}/purge": {"post": _action("Purge old soft-deleted and expired records (console at RESTRICTED)")},
        f"{c}/declassify": {
            "post": _action(
                "Declassify a record: a new version at a lower label (body: agent, key, from, to, reason, "
                "replacement; console at RESTRICTED; a pending request under the two-person rule)"
            ),
            "get": _view(
                "The declassification register, newest first (console at RESTRICTED)",
                [
                    _query("status", QUERIES[f"{C}/declassify"]["status"].schema(), "Only this state"),
                    _query("limit", QUERIES[f"{C}/declassify"]["limit"].schema(), "Entries per page"),
                    _query(
                        "before",
                        QUERIES[f"{C}/declassify"]["before"].schema(),
                        "The previous page's next_before",
                    ),
                ],
            ),
        },
        f"{c}/declassify/{{request_id}}/approve": {
            "post": _action("Approve a pending declassification as a second operator", [REQUEST])
        },
        f"{c}/declassify/{{request_id}}/deny": {
            "post": _action("Refuse a pending declassification", [REQUEST])
        },
        f"{c}/usage": {
            "get": _view(
                "Cost and tokens per day and model, when the store has a usage ledger",
                [
                    _query("agent", {"type": "string"}, "Only this agent's"),
                    _query("since", {"type": "string"}, "ISO 8601, inclusive"),
                    _query("until", {"type": "string"}, "ISO 8601"),
                ],
            )
        },
        f"{c}/graph": {
            "get": _view(
                "One page of an agent's knowledge graph, when the store has one",
                [
                    _query("agent", {"type": "string"}, "The agent"),
                    _query("after", {"type": "string"}, "The next cursor of the previous page"),
                ],
            )
        },
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
