"""ZeroClaw's Markdown memory: ``MEMORY.md`` (long-term) and ``memory/YYYY-MM-DD.md`` (daily notes).

Point it at the workspace folder (the one holding ``MEMORY.md``). Every list
item or paragraph line is one memory; headings are not memories but become
a tag of the entries under them. An entry written ``- **key**: content``
keeps its key; other entries are keyed ``<file>:<line>`` (``MEMORY:12``,
``2026-02-14:3``). ``MEMORY.md`` entries land in category ``core``; daily
entries in ``daily``, created at that date (UTC). Other files are ignored.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import ValidationError
from ..models import Memory
from .sources import Problems, Target, memory, read_text

FORMAT = "zeroclaw"
SOURCE = "dir"
DESCRIPTION = "a ZeroClaw workspace: MEMORY.md and memory/YYYY-MM-DD.md"

DAILY = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
KEYED = re.compile(r"^\*\*(?P<key>[^*]+)\*\*\s*:\s*(?P<content>.+)$")
ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


def _slug(heading: str) -> str:
    return re.sub(r"[^\w-]+", "-", heading.strip().lower()).strip("-")[:100]


def entries(text: str, stem: str) -> list[tuple[int, str, str, list[str]]]:
    """(line, key, content, tags) for every entry of one file."""
    out, heading = [], None
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line or line in ("---", "***") or line.startswith("<!--"):
            continue
        if line.startswith("#"):
            heading = _slug(line.lstrip("#")) or None
            continue
        line = ITEM.sub("", line).strip()
        if not line:
            continue
        keyed = KEYED.match(line)
        key, content = (
            (keyed["key"].strip(), keyed["content"].strip()) if keyed else (f"{stem}:{number}", line)
        )
        out.append((number, key, content, ["zeroclaw", *([heading] if heading else [])]))
    return out


def read(path: Path, target: Target) -> list[Memory]:
    if not path.is_dir():
        raise ValidationError(f"{path}: the zeroclaw format reads the workspace folder (with MEMORY.md)")
    files: list[tuple[Path, str, str | None]] = []
    if (path / "MEMORY.md").is_file():
        files.append((path / "MEMORY.md", "MEMORY", None))
    daily_dir = path / "memory"
    if daily_dir.is_dir():
        for daily in sorted(daily_dir.iterdir()):
            match = DAILY.match(daily.name)
            if match and daily.is_file():
                files.append((daily, match[1], match[1]))
    if not files:
        raise ValidationError(f"{path}: no MEMORY.md and no memory/YYYY-MM-DD.md")
    problems, out = Problems(), []
    keys: dict[str, str] = {}  # key -> where it was first seen
    for file, stem, day in files:
        shown = str(file.relative_to(path))
        try:
            text = read_text(file, shown)
        except ValidationError as exc:
            problems.add(shown, exc.message.removeprefix(f"{shown} ").removeprefix(f"{shown}: "))
            continue
        for number, key, content, tags in entries(text, stem):
            where = f"{shown} line {number}"
            try:
                if key in keys:
                    raise ValidationError(f"key {key!r} repeats {keys[key]}")
                keys[key] = where
                out.append(
                    memory(
                        target,
                        key,
                        content,
                        tags=[*tags, *(["daily"] if day else [])],
                        category="daily" if day else "core",
                        created_at=f"{day}T00:00:00+00:00" if day else None,
                    )
                )
            except ValidationError as exc:
                problems.add(where, exc.message)
    problems.raise_if_any()
    return out
