"""Mem0 exports: the JSON that ``Memory.get_all()`` returns (``{"results": [...]}`` or a bare list).

One Mem0 memory becomes one memory: key ``mem0-<id>``, content its ``memory``
text, tags ``mem0`` plus its ``categories`` and ``user:<user_id>`` /
``agent:<agent_id>`` / ``run:<run_id>`` where present, times kept. Positions
in errors are record numbers (1-based) in the ``results`` list.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ValidationError
from ..models import Memory
from .sources import Problems, Target, load_json, memory, read_text, tag_list

FORMAT = "mem0"
SOURCE = "file"
DESCRIPTION = 'Mem0 get_all() JSON ({"results": [...]} or a list)'


def read(path: Path, target: Target) -> list[Memory]:
    data = load_json(read_text(path), str(path))
    records = data.get("results") if isinstance(data, dict) else data
    if isinstance(data, dict) and "results" not in data:
        raise ValidationError(f'{path}: a Mem0 export is a list or an object with "results"')
    if not isinstance(records, list):
        raise ValidationError(f'{path}: "results" must be a list')
    problems, out = Problems(), []
    seen: dict[str, int] = {}  # id -> its record number
    for number, record in enumerate(records, start=1):
        where = f"{path} record {number}"
        try:
            if not isinstance(record, dict):
                raise ValidationError("each record must be an object")
            ident, text = record.get("id"), record.get("memory")
            if not isinstance(ident, str) or not ident:
                raise ValidationError('"id" must be a non-empty string')
            if not isinstance(text, str):
                raise ValidationError('"memory" must be a string')
            if ident in seen:
                raise ValidationError(f"id {ident!r} repeats record {seen[ident]}")
            seen[ident] = number
            tags = ["mem0", *tag_list(record.get("categories"))]
            tags += [
                f"{field.split('_')[0]}:{record[field]}"
                for field in ("user_id", "agent_id", "run_id")
                if isinstance(record.get(field), str) and record[field]
            ]
            out.append(
                memory(
                    target,
                    f"mem0-{ident}",
                    text,
                    tags=tags,
                    created_at=record.get("created_at"),
                    updated_at=record.get("updated_at"),
                )
            )
        except ValidationError as exc:
            problems.add(where, exc.message)
    problems.raise_if_any()
    return out
