"""The official MCP memory server's file format (``memory.jsonl``) and its answer shapes.

One JSON object per line: ``{"type": "entity", "name", "entityType",
"observations": [...]}`` or ``{"type": "relation", "from", "to",
"relationType"}``. Parsing is all-or-nothing: every line is checked first
and bad lines are reported by number; nothing is imported if any is bad.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..errors import StratamemError, ValidationError
from ..transfer import json_object
from . import checks
from .model import Edge, EdgeDraft, Node, NodeDraft

MAX_REPORTED_ERRORS = 20


def entity(node: Node) -> dict[str, Any]:
    return {"name": node.name, "entityType": node.type, "observations": [o.text for o in node.observations]}


def relation(edge: Edge) -> dict[str, Any]:
    return {"from": edge.source, "to": edge.target, "relationType": edge.relation}


def parse_line(text: str, max_content_bytes: int, line: int = 1) -> NodeDraft | EdgeDraft:
    data = json_object(text, line)
    kind = data.get("type")
    if kind == "entity":
        for field in ("name", "entityType"):
            if field not in data:
                raise ValidationError(f"missing field {field!r}")
        return checks.node_draft(
            data["name"], data["entityType"], "", (), data.get("observations") or [], None, max_content_bytes
        )
    if kind == "relation":
        for field in ("from", "to", "relationType"):
            if field not in data:
                raise ValidationError(f"missing field {field!r}")
        return checks.edge_draft(data["from"], data["to"], data["relationType"])
    raise ValidationError('"type" must be "entity" or "relation"')


def parse_lines(
    lines: Iterable[str], max_content_bytes: int
) -> tuple[list[tuple[int, NodeDraft]], list[tuple[int, EdgeDraft]]]:
    """Every entity and relation with its line number; ``ValidationError`` listing bad lines otherwise."""
    entities: list[tuple[int, NodeDraft]] = []
    relations: list[tuple[int, EdgeDraft]] = []
    errors: list[str] = []
    known: dict[str, int] = {}  # entity name -> its line: a name twice is ambiguous (which type wins?)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = parse_line(line, max_content_bytes, number)
            if isinstance(item, NodeDraft) and item.name in known:
                raise ValidationError(f"entity {item.name!r} repeats line {known[item.name]}")
        except StratamemError as exc:
            errors.append(f"line {number}: {exc.message}")
            if len(errors) >= MAX_REPORTED_ERRORS:
                break
            continue
        if isinstance(item, NodeDraft):
            entities.append((number, item))
            known[item.name] = number
        else:
            relations.append((number, item))
    if errors:
        raise ValidationError("nothing imported; " + "; ".join(errors))
    return entities, relations


def screen(entities: Iterable[tuple[int, NodeDraft]], relations: Iterable[tuple[int, EdgeDraft]]) -> None:
    """The poisoning scanner over every text an import would store; ``PolicyBlocked`` naming the lines."""
    from ..errors import PolicyBlocked
    from ..policy.scanner import describe, scan_all

    bad = []
    for number, draft in entities:
        kinds = scan_all((draft.name, draft.type, *draft.observations))
        if kinds:
            bad.append(f"line {number}: {describe(kinds)}")
    for number, edge in relations:
        kinds = scan_all((edge.source, edge.target, edge.relation))
        if kinds:
            bad.append(f"line {number}: {describe(kinds)}")
    if bad:
        raise PolicyBlocked("nothing imported; " + "; ".join(bad[:MAX_REPORTED_ERRORS]))


def export_lines(nodes: Iterable[Node], edges: Iterable[Edge]) -> list[str]:
    """The official file format: entities first, then relations, one JSON object per line."""
    lines = [json.dumps({"type": "entity", **entity(n)}, ensure_ascii=False) + "\n" for n in nodes]
    lines += [json.dumps({"type": "relation", **relation(e)}, ensure_ascii=False) + "\n" for e in edges]
    return lines
