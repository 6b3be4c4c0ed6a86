"""The optional "related" section of the memory-context block: graph links around what was recalled.

Off by default (``ContextConfig.related_entries = 0``). When on, the seeds are
the graph nodes whose names match the recalled memory keys and the best graph
search hits for the user's message; the section lists their direct visible
links, at most ``related_entries`` lines, within the block's remaining
character budget. Everything goes through the session's own graph reads, so
taint, agents and peers apply, and each read is audited.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .textcut import ellipsize

HEADER = "Related:\n"
MAX_SEEDS = 8


def _line(edge: Any, far: Any, max_chars: int, close_marker: str) -> str | None:
    detail = "; ".join(t for t in (far.content, *(o.text for o in far.observations)) if t)
    text = f"- {edge.source} --{edge.relation}--> {edge.target}" + (f": {detail}" if detail else "")
    line = ellipsize(" ".join(text.split()), max_chars) + "\n"
    return None if close_marker in line else line


def related_lines(
    session: Any,
    keys: Sequence[str],
    message: str,
    limit: int,
    max_entry_chars: int,
    budget: int,
    close_marker: str,
) -> list[str]:
    """Lines of the related section (header first), or [] when there is nothing or no room."""
    graph = getattr(session, "graph", None)
    if graph is None or limit <= 0 or budget <= len(HEADER):
        return []
    seeds = list(graph.open(list(dict.fromkeys(keys))[:MAX_SEEDS], edge_limit=0)[0]) if keys else []
    seeds += [hit.node for hit in graph.search(message, MAX_SEEDS)]
    lines, seen, used = [HEADER], set(), len(HEADER)
    for seed in seeds[:MAX_SEEDS]:
        for near in graph.neighbors(seed.name, 1, limit):
            edge_key = (near.edge.agent_id, near.edge.source, near.edge.target, near.edge.relation)
            if edge_key in seen:
                continue
            seen.add(edge_key)
            line = _line(near.edge, near.node, max_entry_chars, close_marker)
            if line is None:
                continue
            if used + len(line) > budget or len(lines) > limit:
                return lines if len(lines) > 1 else []
            lines.append(line)
            used += len(line)
    return lines if len(lines) > 1 else []


def with_related(
    session: Any,
    lines: list[str],
    keys: Sequence[str],
    message: str,
    config: Any,
    overhead: int,
    close_marker: str,
) -> list[str]:
    """``lines`` plus the related section when ``config.related_entries`` asks for it, within the budget left."""
    if not config.related_entries:
        return lines
    budget = config.max_total_chars - overhead - sum(map(len, lines))
    return lines + related_lines(
        session, keys, message, config.related_entries, config.max_entry_chars, budget, close_marker
    )
