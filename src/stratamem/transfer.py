"""JSON Lines export and import: one memory per line, every field, levels by name.

A line carries ``occurred_at`` (absent: ``created_at``), when the memory has one its ``context``
(checked as a save checks it), and when its label has any its ``compartments`` (names, sorted; the
importing store must define each: ``Store.labelled``); times in a line must carry an offset.

Import is all-or-nothing: every line is parsed and validated first, and a
single bad line (reported with its line number) imports nothing. A partial
import of a memory store is harder to reason about than a refused one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import IO, Any

from .errors import ValidationError
from .labels import Label, compartment_set
from .levels import Level
from .models import Memory, situated
from .strict_json import DuplicateKey as DuplicateKey  # re-exported: importers and tests name it here
from .strict_json import read_json as strict_json
from .validation import (
    check_agent_id,
    check_category,
    check_content,
    check_context,
    check_id,
    check_key,
    check_tags,
    parse_time,
)

MAX_REPORTED_ERRORS = 20


def dump_lines(records: Iterable[Any]) -> Iterator[str]:
    """Memories, transcript messages and usage records (anything with ``to_dict``), one per line."""
    for record in records:
        yield json.dumps(record.to_dict(), ensure_ascii=False) + "\n"


def _time(value: object, field: str) -> datetime:
    return parse_time(value, field, naive_is_utc=False)


def json_object(text: str, line: int = 1) -> dict[str, Any]:
    """One JSON Lines line (line ``line`` of its file) as an object, or a ValidationError saying why.

    Read by ``strict_json.read_json``, the reader of every body and import (a repeated key, NaN,
    a lone surrogate or deep nesting refused, located).
    """
    data = strict_json(text, first_line=line)
    if not isinstance(data, dict):
        raise ValidationError("each line must be a JSON object")
    return data


def parse_line(text: str, max_content_bytes: int, line: int = 1) -> Memory:
    data = json_object(text, line)
    missing = [f for f in ("key", "content", "level", "agent_id") if f not in data]
    if missing:
        raise ValidationError(f"missing field(s): {', '.join(missing)}")
    created = _time(data["created_at"], "created_at") if data.get("created_at") else None
    updated = _time(data["updated_at"], "updated_at") if data.get("updated_at") else None
    created = created or updated or datetime.now(UTC)
    session_id = data.get("session_id")
    if session_id is not None:
        session_id = check_id(session_id, "session_id")
    lineage = check_id(data.get("lineage_id") or str(uuid.uuid4()), "lineage_id")
    occurred = _time(data["occurred_at"], "occurred_at") if data.get("occurred_at") else None
    return situated(
        Memory(
            key=check_key(data["key"]),
            content=check_content(data["content"], max_content_bytes),
            level=Level.parse(data["level"]),
            compartments=compartment_set(_names(data.get("compartments"))),
            tags=check_tags(
                data.get("tags")
            ),  # a list of strings, as a save takes it: not an object, not false
            category=check_category(data.get("category", "core")),
            agent_id=check_agent_id(data["agent_id"]),
            session_id=session_id,
            created_at=created,
            updated_at=updated or created,
            lineage_id=lineage,
            expires_at=_time(data["expires_at"], "expires_at") if data.get("expires_at") else None,
            occurred_at=occurred or created,  # a line from before the field: it happened when it was created
        ),
        check_context(data.get("context")),
    )


def _names(value: object) -> list[object]:
    """A line's ``compartments``: a list of names (absent or null: none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError("compartments must be a list of compartment names")
    return value


def read_lines(
    stream: IO[str], max_content_bytes: int, labelled: Callable[[Memory], Memory] | None = None
) -> list[Memory]:
    """Parse a whole file of memory lines; raise one ValidationError listing every bad line."""
    memories, turns = read_records(stream, max_content_bytes, labelled)
    if turns:
        raise ValidationError(
            "import refused, nothing was imported: the file holds transcript or usage lines"
        )
    return memories


def read_records(
    stream: IO[str], max_content_bytes: int, labelled: Callable[[Memory], Memory] | None = None
) -> tuple[list[Memory], list[Any]]:
    """Parse a whole export: memory lines, and turn lines (``"record": "message" | "usage"``).

    ``labelled`` (the importing store's ``Store.labelled``) gives each memory its stored label, so a
    compartment the store does not define is reported with its line; without it a line with compartments
    is refused (nothing here could store it).
    """
    from .turn.transfer import parse_turn_record

    memories: list[Memory] = []
    turns: list[Any] = []
    errors: list[str] = []
    seen: dict[tuple[str, Label, str], int] = {}  # one live version per agent, label and key
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            if '"record"' in line:
                data = json_object(line, number)
                if "record" in data:
                    turns.append(parse_turn_record(data))
                    continue
            memory = parse_line(line, max_content_bytes, number)
            if labelled is not None:
                memory = labelled(memory)
            elif memory.compartments:
                raise ValidationError("compartments cannot be imported here: no store encodes them")
            version = (memory.agent_id, memory.label, memory.key)
            if version in seen:
                raise ValidationError(
                    f"key {memory.key!r} of agent {memory.agent_id!r} at {memory.label.name} "
                    f"repeats line {seen[version]}"
                )
            seen[version] = number
            memories.append(memory)
        except ValidationError as exc:
            errors.append(f"line {number}: {exc.message}")
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = f"\n... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        raise ValidationError(
            f"import refused, nothing was imported; {len(errors)} bad line(s):\n" + "\n".join(shown) + more
        )
    return memories, turns
