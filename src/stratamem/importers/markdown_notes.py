"""basic-memory / Obsidian-style Markdown folders: one note is one memory.

Every ``*.md`` under the folder (hidden folders such as ``.obsidian`` and
``.git`` skipped) becomes a memory keyed by its path relative to the folder,
without ``.md`` (``projects/lisbon``). YAML front matter (``---`` ... ``---``)
gives ``tags`` (a list or a comma/space separated string), ``category`` /
``type``, ``created``/``date`` (the memory's created and occurred time) and
``title`` (its context: stored with it and used to find it, never shown as
content); the content is the body. An empty note is
skipped (it has nothing to remember) and counted as skipped; anything else
malformed refuses the import with the file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import ValidationError
from ..models import Memory
from .sources import MAX_FILES, Problems, Target, memory, read_text, tag_list

FORMAT = "markdown-notes"
SOURCE = "dir"
DESCRIPTION = "a folder of Markdown notes (basic-memory, Obsidian): one note = one memory, front-matter tags"


def notes(root: Path) -> list[Path]:
    found = []
    for path in sorted(root.rglob("*.md")):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        found.append(path)
        if len(found) > MAX_FILES:
            raise ValidationError(f"{root}: more than {MAX_FILES} notes")
    return found


class _FrontMatterLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error, not "last wins"."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: list[Any] = []
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: the base class says so
                break
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.append(key)
        return super().construct_mapping(node, deep=deep)


def split_front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    """(front matter, body, the body's first line number); ValidationError with the line when malformed."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, 1
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() in ("---", "..."):
            try:
                data = yaml.load("\n".join(lines[1 : number - 1]), Loader=_FrontMatterLoader) or {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                line_no = mark.line + 2 if mark is not None else 1
                problem = getattr(exc, "problem", None)
                detail = f" ({problem})" if problem else ""
                raise ValidationError(f"line {line_no}: front matter is not valid YAML{detail}") from None
            if not isinstance(data, dict):
                raise ValidationError("line 2: front matter must be a mapping")
            return data, "\n".join(lines[number:]), number + 1
    raise ValidationError("line 1: front matter is not closed by ---")


def _title(value: object) -> str | None:
    """A note's title as text (YAML may read ``title: 1984`` as a number); a list or mapping is no title."""
    return None if value is None or isinstance(value, (list, dict)) else str(value)


def read(path: Path, target: Target) -> list[Memory]:
    if not path.is_dir():
        raise ValidationError(f"{path}: the markdown-notes format reads a folder")
    problems, out = Problems(), []
    for note in notes(path):
        relative = note.relative_to(path).with_suffix("").as_posix()
        where = str(note.relative_to(path))
        try:
            front, body, _ = split_front_matter(read_text(note, where))
            if not body.strip():
                continue  # an empty note: nothing to remember
            category = front.get("category") or front.get("type") or "core"
            created = front.get("created") or front.get("date")
            out.append(
                memory(
                    target,
                    relative,
                    body.strip("\n"),
                    tags=tag_list(front.get("tags")),
                    category=str(category),
                    created_at=str(created) if created else None,
                    context=_title(front.get("title")),
                )
            )
        except ValidationError as exc:
            problems.add(where, exc.message.removeprefix(f"{where} ").removeprefix(f"{where}: "))
    problems.raise_if_any()
    return out
