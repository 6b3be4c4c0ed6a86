"""The building blocks of an OpenAPI 3.1 document shared by the REST, turn and console descriptions.

Kept in their own module so ``openapi_turns`` and ``console_openapi`` can build
on them while ``openapi`` assembles the whole document from all three.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

LEVEL = {"type": "string", "enum": ["PUBLIC", "INTERNAL", "CONFIDENTIAL", "RESTRICTED"]}
TIME = {"type": "string", "format": "date-time"}
TAGS = {"type": "array", "items": {"type": "string"}}
COMPARTMENT = {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,31}$"}
LABEL = {"type": "string", "description": "A level and its compartments, e.g. CONFIDENTIAL+FINANCE+HR"}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def obj(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


ERRORS = {
    "400": "VALIDATION_ERROR: bad arguments or body",
    "401": "UNAUTHENTICATED: missing or unknown bearer token",
    "403": "POLICY_BLOCKED: refused by policy or above the token's clearance",
    "404": "NOT_FOUND: no such session or memory (or not this token's)",
    "413": "VALIDATION_ERROR: the request body is larger than the server accepts",
    "503": "STORAGE_ERROR: the store is unavailable",
}


def response(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def op(
    summary: str,
    ok: tuple[str, str, dict[str, Any]],
    *,
    body: str | None = None,
    params: Sequence[dict[str, Any]] = (),
    errors: tuple[str, ...] = ("400", "401", "404", "503"),
    public: bool = False,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    status, description, schema = ok
    responses = {status: response(schema, description)}
    for code in errors:
        responses[code] = response(ref("Error"), ERRORS[code])
    if extra:
        responses.update(extra)
    op: dict[str, Any] = {"summary": summary, "responses": responses}
    if params:
        op["parameters"] = list(params)
    if body:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": ref(body)}}}
    if public:
        op["security"] = []
    return op


def path(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
        "description": description,
    }


def query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}
