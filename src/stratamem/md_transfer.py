"""Export any store to the Markdown store's layout, and import such a directory into any store.

The export writes exactly what a ``markdown://`` store keeps (``storage/md_format``),
so the directory can be opened as a store, read, edited, kept in git — and
imported back. Import is all-or-nothing, like the JSON Lines import: every
problem in every file is listed (file and line) and nothing is imported.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from datetime import datetime

from .errors import ValidationError
from .levels import Level
from .models import Memory
from .private import make_private_dirs
from .storage.markdown import files
from .storage.markdown import format as fmt

MAX_REPORTED = 20


def export_markdown(
    memories: Iterable[Memory],
    directory: str,
    agents: Collection[str] | None = None,
    levels: Collection[Level] | None = None,
) -> int:
    """Write the chosen agents' and levels' memories under ``directory`` (which must hold no memory files yet)."""
    groups: dict[str, list[Memory]] = {}
    for memory in memories:
        if (agents and memory.agent_id not in agents) or (levels and memory.level not in levels):
            continue
        if memory.compartments:  # a file holds a level only: the record would come back without them
            raise ValidationError(
                f"memory {memory.key!r} of agent {memory.agent_id!r} is under compartments "
                f"({memory.label.name}), which the Markdown layout cannot hold; export JSON Lines instead"
            )
        rel = fmt.file_for(
            fmt.encode_segment(memory.agent_id), memory.level, memory.category, memory.created_at
        )
        groups.setdefault(rel, []).append(memory)
    make_private_dirs(directory)
    root = os.path.realpath(directory)
    if files.walk(root).files:
        raise ValidationError(f"{directory} already holds memory files; export into an empty directory")
    for rel, group in sorted(groups.items()):
        first = group[0]
        title = fmt.place_of(rel).default_category or first.category
        title = rel.rsplit("/", 1)[-1][:-3] if title == "daily" else title
        files.write_agent_file(root, rel.split("/", 1)[0], first.agent_id)
        files.write_atomic(root, rel, fmt.render_file(first.agent_id, first.level, title, group))
    return sum(len(g) for g in groups.values())


def read_markdown(
    directory: str,
    max_content_bytes: int,
    now: datetime,
    max_file_bytes: int = files.DEFAULT_MAX_FILE_BYTES,
) -> list[Memory]:
    """Every memory in a Markdown-layout directory; one ``ValidationError`` lists every problem."""
    if not os.path.isdir(directory):
        raise ValidationError(f"{directory} is not a directory")
    root = os.path.realpath(directory)
    walk = files.walk(root)
    problems = [str(p) for p in walk.problems]
    memories: list[Memory] = []
    seen: dict[tuple[str, Level, str], str] = {}
    for rel in sorted(walk.files):
        place = fmt.place_of(rel)
        agent = walk.agent_names[place.agent_dir]
        try:
            text, _ = files.read_text(root, rel, max_file_bytes)
            sections = fmt.parse_file(text, max_content_bytes)
        except files.FileProblem as exc:
            problems.append(str(exc))
            continue
        except fmt.FormatError as exc:
            problems.append(f"{rel}:{exc.line}: {exc.reason}")
            continue
        for s in sections:
            slot = (agent, place.level, s.key)
            if slot in seen:
                problems.append(
                    f"{rel}:{s.line}: key {s.key!r} is also in {seen[slot]}; a level holds each key once"
                )
                continue
            if s.category is None and place.default_category is None:
                problems.append(
                    f"{rel}:{s.line}: this file's name names no category: add a '- category:' line"
                )
                continue
            seen[slot] = rel
            memories.append(s.memory(agent, place.level, place.default_category or "core", now))
    if problems:
        shown = problems[:MAX_REPORTED]
        more = f"\n... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        raise ValidationError(
            f"import refused, nothing was imported; {len(problems)} problem(s):\n" + "\n".join(shown) + more
        )
    return memories
