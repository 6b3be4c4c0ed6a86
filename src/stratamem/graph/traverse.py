"""Breadth-first traversal over visible edges, bounded, cycle-safe.

Pure: ``edges_of`` returns the visible edges touching a set of nodes (the
storage layer only returns an edge whose two endpoints are visible), so a
walk can never step onto — or through — a node the session cannot see.
Nodes are (agent, name) keys; edges never cross agents. Each node is visited
once, so cycles and self-loops end the walk instead of looping it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .model import Edge

Key = tuple[str, str]
EdgesOf = Callable[[Sequence[Key]], list[Edge]]


def _other(edge: Edge, key: Key) -> Key:
    return (edge.agent_id, edge.target if edge.source == key[1] else edge.source)


def _incident(edges: Sequence[Edge]) -> dict[Key, list[Edge]]:
    by_node: dict[Key, list[Edge]] = {}
    for edge in edges:
        for end in dict.fromkeys(((edge.agent_id, edge.source), (edge.agent_id, edge.target))):
            by_node.setdefault(end, []).append(edge)
    return by_node


def expand(
    starts: Sequence[Key], depth: int, edges_of: EdgesOf, max_frontier: int
) -> list[tuple[Key, int, Edge]]:
    """Every node within ``depth`` steps (either direction) with its distance and first edge, in BFS order.

    The order is deterministic: per step, frontier nodes in order, their edges
    in (source, relation, target) order. At most ``max_frontier`` nodes are
    expanded per step, so a hub cannot make one call unbounded.
    """
    seen: set[Key] = set(starts)
    frontier = list(starts)
    found: list[tuple[Key, int, Edge]] = []
    for distance in range(1, depth + 1):
        if not frontier:
            break
        by_node = _incident(edges_of(frontier[:max_frontier]))
        nxt: list[Key] = []
        for key in frontier[:max_frontier]:
            for edge in by_node.get(key, ()):
                other = _other(edge, key)
                if other not in seen:
                    seen.add(other)
                    nxt.append(other)
                    found.append((other, distance, edge))
        frontier = nxt
    return found


def shortest_path(
    start: Key, goal: Key, depth: int, edges_of: EdgesOf, max_frontier: int
) -> list[Edge] | None:
    """The edges of one shortest path (ties: BFS order) of at most ``depth`` steps, or None."""
    if start == goal:
        return []
    parent: dict[Key, tuple[Key, Edge]] = {}
    seen, frontier = {start}, [start]
    for _ in range(depth):
        by_node = _incident(edges_of(frontier[:max_frontier]))
        nxt = []
        for key in frontier[:max_frontier]:
            for edge in by_node.get(key, ()):
                other = _other(edge, key)
                if other in seen:
                    continue
                seen.add(other)
                parent[other] = (key, edge)
                if other == goal:
                    path, at = [], goal
                    while at != start:
                        at, step = parent[at]
                        path.append(step)
                    return path[::-1]
                nxt.append(other)
        frontier = nxt
        if not frontier:
            break
    return None
