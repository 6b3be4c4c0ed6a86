"""Relationship memory: a classified knowledge graph under the same lattice as memories.

``session.graph`` (``graph.api.GraphSession``) is the API; records are in
``graph.model``. Pure pieces live here (checks, ranking, traversal,
the MCP memory file format); storage is ``storage/sql/graph_read.py``.
"""

from .model import (
    Edge,
    EdgeDraft,
    GraphPage,
    GraphStats,
    Neighbor,
    Node,
    NodeDraft,
    NodeHit,
    Observation,
    Suggestion,
)

__all__ = [
    "Edge",
    "EdgeDraft",
    "GraphPage",
    "GraphStats",
    "Neighbor",
    "Node",
    "NodeDraft",
    "NodeHit",
    "Observation",
    "Suggestion",
]
