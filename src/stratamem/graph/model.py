"""Records of the knowledge graph, as callers see them.

A node is identified by (agent, name); like a memory key, the same name may
exist at several levels (versions) and a session sees exactly one of them:
the highest at or below its taint. Observations and edges are separate
records with levels of their own, attached to names, so an observation
written at CONFIDENTIAL to a PUBLIC node is invisible to a PUBLIC session
while the node itself is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..levels import Level


@dataclass(frozen=True, slots=True)
class Observation:
    text: str
    level: Level
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    agent_id: str
    name: str
    type: str
    content: str
    tags: tuple[str, ...]
    level: Level
    source: str | None
    session_id: str | None
    created_at: datetime
    updated_at: datetime
    observations: tuple[Observation, ...] = ()


@dataclass(frozen=True, slots=True)
class Edge:
    id: str
    agent_id: str
    source: str
    target: str
    relation: str
    note: str | None
    level: Level
    created_at: datetime


@dataclass(frozen=True, slots=True)
class NodeHit:
    node: Node
    score: float


@dataclass(frozen=True, slots=True)
class Neighbor:
    """A node reached from the start: its distance and the edge it was first reached by."""

    node: Node
    distance: int
    edge: Edge


@dataclass(frozen=True, slots=True)
class Suggestion:
    node: Node
    shared_neighbors: int
    score: float


@dataclass(frozen=True, slots=True)
class GraphStats:
    nodes: int
    edges: int
    observations: int
    types: tuple[tuple[str, int], ...]
    relations: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class GraphPage:
    """One bounded page of the visible graph; ``cursor`` resumes after it (None: nothing more)."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    cursor: str | None
    truncated: bool


@dataclass(frozen=True, slots=True)
class NodeDraft:
    """A node write before the store fixes its level (always the live taint)."""

    name: str
    type: str
    content: str = ""
    tags: tuple[str, ...] = ()
    observations: tuple[str, ...] = ()
    source: str | None = None


@dataclass(frozen=True, slots=True)
class EdgeDraft:
    source: str
    target: str
    relation: str
    note: str | None = None
