"""Export any store to the Markdown store's layout, and import such a directory into any store.

The export writes exactly what a ``markdown://`` store keeps (``storage/md_format``),
so the directory can be opened as a store, read, edited, kept in git — and
imported back. Import is all-or-nothing, like the JSON Lines import: every
problem in every file is listed (file and line) and nothing is imported.

Labels travel as folders both ways: a memory with compartments goes to
``<agent>/CONFIDENTIAL+FINANCE+HR/`` and comes back at that label, its
compartments encoded through the importing store's registry (a folder naming
one that store does not define is a problem, like any other).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable
from datetime import datetime

from .errors import ValidationError
from .labels import Compartments, Label
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
    named: Callable[[Memory], Memory] | None = None,
) -> int:
    """Write the chosen agents' and levels' memories under ``directory`` (which must hold no memory files yet).

    Each memory goes to its label's folder; ``named`` gives a record its compartments' names (the store's
    ``compartments.named``) when it carries only their bits. A record whose names stay unknown is refused
    before anything is written, never put in its level's folder.
    """
    groups: dict[str, list[Memory]] = {}
    for memory in memories:
        if (agents and memory.agent_id not in agents) or (levels and memory.level not in levels):
            continue
        if named is not None:
            memory = named(memory)
        if memory.label_code >= 4 and not memory.compartments:
            raise ValidationError(
                f"memory {memory.key!r} of {memory.agent_id!r} has compartments whose names are unknown here"
            )
        rel = fmt.file_for(
            fmt.encode_segment(memory.agent_id), memory.label, memory.category, memory.created_at
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
        files.write_label_file(root, rel, first.label)
        files.write_atomic(root, rel, fmt.render_file(first.agent_id, first.label, title, group))
    return sum(len(g) for g in groups.values())


def read_markdown(
    directory: str,
    max_content_bytes: int,
    now: datetime,
    max_file_bytes: int = files.DEFAULT_MAX_FILE_BYTES,
    compartments: Compartments | None = None,
) -> list[Memory]:
    """Every memory in a Markdown-layout directory; one ``ValidationError`` lists every problem.

    ``compartments``: the importing store's registry, which gives a label folder's compartments their
    bits (None: the store defines none, so every folder with compartments is a problem).
    """
    registry = compartments or Compartments()
    if not os.path.isdir(directory):
        raise ValidationError(f"{directory} is not a directory")
    root = os.path.realpath(directory)
    walk = files.walk(root)
    problems = [str(p) for p in walk.problems]
    memories: list[Memory] = []
    seen: dict[tuple[str, Label, str], str] = {}
    refused: set[str] = set()
    for rel in sorted(walk.files):
        place = fmt.place_of(rel)
        agent = walk.agent_names[place.agent_dir]
        folder, label = "/".join(rel.split("/", 2)[:2]), walk.label_of(rel)  # <agent>/<LABEL>
        try:
            code = registry.encode(label)
        except ValidationError as exc:
            if folder not in refused:
                refused.add(folder)
                problems.append(f"{folder}: label folder not imported: {exc.message}")
            continue
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
            slot = (agent, label, s.key)
            if slot in seen:
                problems.append(
                    f"{rel}:{s.line}: key {s.key!r} is also in {seen[slot]}; a label holds each key once"
                )
                continue
            if s.category is None and place.default_category is None:
                problems.append(
                    f"{rel}:{s.line}: this file's name names no category: add a '- category:' line"
                )
                continue
            seen[slot] = rel
            memory = s.memory(agent, code, place.default_category or "core", now, label.compartments)
            memories.append(memory)
    if problems:
        shown = problems[:MAX_REPORTED]
        more = f"\n... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        raise ValidationError(
            f"import refused, nothing was imported; {len(problems)} problem(s):\n" + "\n".join(shown) + more
        )
    return memories
