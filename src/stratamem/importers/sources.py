"""What every importer shares: the operator's target, bounded strict reading, and positioned errors.

Foreign files are hostile input: invalid UTF-8 is reported with its byte
offset and line, duplicate JSON keys are refused (silently keeping one of two
values would lose data), sizes are bounded, and every problem is collected
with its position so one run shows them all — and nothing is imported.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..levels import Level
from ..models import Memory, situated
from ..strict_json import JsonRefused, read_json
from ..validation import (
    check_agent_id,
    check_category,
    check_content,
    check_context,
    check_key,
    check_tags,
    parse_time,
)

MAX_FILE_BYTES = 64 * 1024 * 1024  # one source file
MAX_FILES = 100_000  # files under one directory
MAX_REPORTED = 20


@dataclass(frozen=True)
class Target:
    """Where imported memories land: the operator's choice, never the file's."""

    agent_id: str
    level: Level
    max_content_bytes: int

    def __post_init__(self) -> None:
        check_agent_id(self.agent_id)


class Problems:
    """Positioned problems, raised together: ``import refused, nothing was imported; ...``."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")

    def raise_if_any(self) -> None:
        if not self.items:
            return
        shown = self.items[:MAX_REPORTED]
        more = f"\n... and {len(self.items) - len(shown)} more" if len(self.items) > len(shown) else ""
        raise ValidationError(
            f"import refused, nothing was imported; {len(self.items)} problem(s):\n" + "\n".join(shown) + more
        )


def read_text(path: Path, shown: str | None = None) -> str:
    """A whole UTF-8 file (BOM allowed), or a ValidationError naming the file and the bad byte's line."""
    name = shown or str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ValidationError(f"{name}: {size} bytes; the limit is {MAX_FILE_BYTES}")
        data = path.read_bytes()
    except OSError as exc:
        raise ValidationError(f"{name}: cannot read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValidationError(f"{name} line {line} (byte {exc.start}): not valid UTF-8") from None


def load_json(text: str, name: str) -> Any:
    """The strict reader of every body and import, its refusal naming the file."""
    try:
        return read_json(text)
    except JsonRefused as exc:
        raise exc.located(name) from None


def memory(
    target: Target,
    key: str,
    content: str,
    *,
    tags: Iterable[str] = (),
    category: str = "core",
    created_at: object = None,
    updated_at: object = None,
    context: object = None,
) -> Memory:
    """One memory for ``target``, every field validated as a save would (ValidationError otherwise).

    The fact happened when the source created it: ``occurred_at`` is the source's creation time (its
    update time when it has none; the import's time when it has neither). ``context``: text that
    situates it (a note's title), checked as a save checks it."""
    created = parse_time(created_at, "created_at", naive_is_utc=True) if created_at else None
    updated = parse_time(updated_at, "updated_at", naive_is_utc=True) if updated_at else None
    created = created or updated or datetime.now(UTC)
    situation = check_context(context)
    return situated(
        Memory(
            key=check_key(key),
            content=check_content(content, target.max_content_bytes),
            level=target.level,
            tags=check_tags(list(dict.fromkeys(tags))),
            category=check_category(category),
            agent_id=target.agent_id,
            session_id=None,
            created_at=created,
            updated_at=updated or created,
            lineage_id=str(uuid.uuid4()),
            occurred_at=created,
        ),
        situation,
    )


def tag_list(value: object) -> list[str]:
    """Tags as notes write them: a list of strings, or one string of comma/space separated tags; ``#`` dropped.

    Anything else (an object, a number, a boolean, a list holding one) is refused as a save refuses
    it, rather than turned into tags by ``str()``.
    """
    if value is None:
        return []
    if isinstance(value, str):
        items: list[object] = list(value.replace(",", " ").split())
    elif isinstance(value, list):
        items = value
    else:
        raise ValidationError("tags must be a list of strings")
    tags = []
    for item in items:
        if not isinstance(item, str):
            raise ValidationError("tags must be a list of strings")
        tag = item.strip().lstrip("#")
        if tag:
            tags.append(tag)
    return tags
