"""``session.graph``: the knowledge graph as one session sees it.

Every method validates its arguments first (nothing is written when one is
bad), then runs one backend transaction: writes at the live taint for the
session's own agent, reads over the visible view of the own agent and peers.
Each appends one audit event (names, levels, ids — never content).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..audit import AuditDraft
from ..errors import ValidationError
from ..storage import graph_store
from ..storage.graph_store import GraphBody, T
from ..storage.records import SessionRecord, session_event
from ..storage.sql import graph_batch as b
from ..storage.sql import graph_read as q
from ..storage.sql import graph_write as w
from ..storage.sql.graph_read import GraphConn
from ..validation import check_tags, clamp_max_results
from . import checks, traverse
from .model import Edge, EdgeDraft, GraphPage, GraphStats, Neighbor, Node, NodeDraft, NodeHit, Suggestion

if TYPE_CHECKING:
    from ..session import Session

MAX_DEPTH = 3
MAX_QUERY_CHARS = 100_000
PAGE_NODES = 100
PAGE_EDGES = 500


def clamp_depth(value: object, default: int = 1) -> int:
    """1..3; anything that is not an integer falls back to the default."""
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return max(1, min(MAX_DEPTH, value))


def _read_draft(op: str, record: SessionRecord, nodes: Iterable[Node], detail: dict[str, Any]) -> AuditDraft:
    return session_event(op, record, ((n.name, n.level, n.id) for n in nodes), detail)


class GraphSession:
    def __init__(self, session: Session) -> None:
        self._session = session
        self._store = session.store
        self._backend = session.store.backend

    # writes -------------------------------------------------------------------------------
    def _write(self, body: GraphBody[T]) -> T:
        return graph_store.write(self._backend, self._session.id, self._store.now(), body)

    def _read(self, body: GraphBody[T]) -> T:
        return graph_store.read(self._backend, self._session.id, self._store.now(), body)

    def draft(
        self,
        name: object,
        type: object = None,
        content: object = "",
        tags: object = (),
        observations: object = (),
        source: object = None,
    ) -> NodeDraft:
        """A checked node draft; ``type`` None keeps an existing node's type (new nodes: 'thing')."""
        if type is not None:
            checks.check_type(type)
        made = checks.node_draft(
            name,
            type or checks.DEFAULT_TYPE,
            content,
            check_tags(tags),
            observations,
            source,
            self._store.max_content_bytes,
        )
        return (
            made
            if type is not None
            else NodeDraft(made.name, "", made.content, made.tags, made.observations, made.source)
        )

    def capture(
        self,
        name: str,
        type: str | None = None,
        content: str = "",
        tags: Sequence[str] = (),
        observations: Sequence[str] = (),
        source: str | None = None,
    ) -> Node:
        """Create or update a node at the live taint (a lower visible version gets a new version)."""
        node_draft = self.draft(name, type, content, tags, observations, source)
        return self.write_nodes([node_draft], merge=True)[0][0]

    def write_nodes(self, drafts: Sequence[NodeDraft], merge: bool) -> list[tuple[Node, bool]]:
        analyzer = self._store.analyzer
        return self._write(lambda gc, rec: b.write_nodes(gc, analyzer, rec, drafts, rec_now(self), merge))

    def add_observations(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, list[str]]]:
        checked = [(checks.check_name(n, "entityName"), checks.check_observations(t)) for n, t in items]
        analyzer = self._store.analyzer
        return self._write(lambda gc, rec: w.add_observations(gc, analyzer, rec, checked, rec_now(self)))

    def relate(self, source: str, target: str, relation: str, note: str | None = None) -> Edge:
        return self.relate_many([checks.edge_draft(source, target, relation, note)])[0][0]

    def relate_many(self, drafts: Sequence[EdgeDraft]) -> list[tuple[Edge, bool]]:
        return self._write(lambda gc, rec: b.relate(gc, rec, drafts, rec_now(self)))

    def delete_nodes(self, names: Sequence[str]) -> list[str]:
        """Soft-deletes the own versions at exactly the taint; names not there are skipped (returns those deleted)."""
        checked = checks.check_names(names)
        return self._write(lambda gc, rec: w.delete_nodes(gc, rec, checked, rec_now(self)))

    def delete_observations(self, items: Sequence[tuple[str, Sequence[str]]]) -> int:
        checked = [(checks.check_name(n, "entityName"), checks.check_observations(t)) for n, t in items]
        return self._write(lambda gc, rec: w.delete_observations(gc, rec, checked, rec_now(self)))

    def delete_edges(self, drafts: Sequence[EdgeDraft]) -> int:
        return self._write(lambda gc, rec: w.delete_edges(gc, rec, drafts, rec_now(self)))

    # reads --------------------------------------------------------------------------------
    def get(self, name: str) -> Node | None:
        """The visible node with this name, own agent first, then peers in order."""
        found = self.open([name], edge_limit=0)[0]
        return found[0] if found else None

    def open(self, names: Sequence[str], edge_limit: int = PAGE_EDGES) -> tuple[list[Node], list[Edge]]:
        """Visible nodes with these names and the visible edges that touch them (capped)."""
        checked = checks.check_names(names)

        def body(gc: GraphConn, rec: SessionRecord) -> tuple[tuple[list[Node], list[Edge]], AuditDraft]:
            scope = q.Scope(rec)
            nodes = q.named(gc, scope, checked)
            edges = (
                q.edges_touching(gc, scope, [(n.agent_id, n.name) for n in nodes], edge_limit)
                if edge_limit
                else []
            )
            return (nodes, edges), _read_draft(
                "graph.open", rec, nodes, {"asked": len(checked), "found": len(nodes), "edges": len(edges)}
            )

        return self._read(body)

    def search(self, query: str, max_results: int = 10) -> list[NodeHit]:
        """Visible nodes ranked by BM25 over name, type, content, tags and observations (any word may match)."""
        return self.search_subgraph(query, max_results, edge_limit=0)[0]

    def search_subgraph(
        self, query: str, max_results: int = 10, edge_limit: int = PAGE_EDGES
    ) -> tuple[list[NodeHit], list[Edge]]:
        """``search`` plus the visible edges touching the hits (at most ``edge_limit``), in one snapshot."""
        if not isinstance(query, str):
            raise ValidationError("query must be a string")
        limit = clamp_max_results(max_results)
        text = query[:MAX_QUERY_CHARS].encode("utf-8", "replace").decode("utf-8")
        terms = self._store.analyzer.query_terms(text)

        def body(gc: GraphConn, rec: SessionRecord) -> tuple[tuple[list[NodeHit], list[Edge]], AuditDraft]:
            scope = q.Scope(rec)
            hits = [NodeHit(n, s) for n, s in q.search(gc, scope, terms, limit)]
            keys = [(h.node.agent_id, h.node.name) for h in hits]
            edges = q.edges_touching(gc, scope, keys, edge_limit) if edge_limit and keys else []
            return (hits, edges), _read_draft(
                "graph.search",
                rec,
                [h.node for h in hits],
                {"results": len(hits), "terms": len(terms), "edges": len(edges)},
            )

        return self._read(body)

    def _start(self, gc: GraphConn, scope: q.Scope, name: str) -> Node:
        found = q.named(gc, scope, [name])
        if not found:
            raise q.not_found(name)
        return found[0]

    def neighbors(self, name: str, depth: int = 1, limit: int = 20) -> list[Neighbor]:
        """Nodes within ``depth`` (1..3) steps either way, nearest first, at most ``limit`` (1..100)."""
        checked, depth, limit = checks.check_name(name), clamp_depth(depth), clamp_max_results(limit, 20)

        def body(gc: GraphConn, rec: SessionRecord) -> tuple[list[Neighbor], AuditDraft]:
            scope = q.Scope(rec)
            start = self._start(gc, scope, checked)
            reached = traverse.expand(
                [(start.agent_id, start.name)],
                depth,
                lambda keys: q.edges_touching(gc, scope, keys),
                q.MAX_FRONTIER,
            )[:limit]
            nodes = q.load_nodes(gc, scope, [key for key, _, _ in reached])
            out = [Neighbor(nodes[key], dist, edge) for key, dist, edge in reached if key in nodes]
            return out, _read_draft(
                "graph.neighbors", rec, [start, *(n.node for n in out)], {"depth": depth, "results": len(out)}
            )

        return self._read(body)

    def degree(self, name: str) -> tuple[int, int]:
        """(outgoing, incoming) visible edges of the visible node ``name`` (a self-loop counts in both)."""
        checked = checks.check_name(name)

        def body(gc: GraphConn, rec: SessionRecord) -> tuple[tuple[int, int], AuditDraft]:
            scope = q.Scope(rec)
            start = self._start(gc, scope, checked)
            edges = q.edges_touching(gc, scope, [(start.agent_id, start.name)])
            out = sum(1 for e in edges if e.source == start.name)
            inc = sum(1 for e in edges if e.target == start.name)
            return (out, inc), _read_draft("graph.degree", rec, [start], {})

        return self._read(body)

    def path(self, source: str, target: str, max_depth: int = MAX_DEPTH) -> list[Edge] | None:
        """One shortest path of visible edges (at most 3 steps) between two visible nodes, or None."""
        a, b, depth = (
            checks.check_name(source, "from"),
            checks.check_name(target, "to"),
            clamp_depth(max_depth, 3),
        )

        def body(gc: GraphConn, rec: SessionRecord) -> tuple[list[Edge] | None, AuditDraft]:
            scope = q.Scope(rec)
            start, goal = self._start(gc, scope, a), self._start(gc, scope, b)
            found = traverse.shortest_path(
                (start.agent_id, start.name),
                (goal.agent_id, goal.name),
                depth,
                lambda keys: q.edges_touching(gc, scope, keys),
                q.MAX_FRONTIER,
            )
            return found, _read_draft("graph.path", rec, [start, goal], {"found": found is not None})

        return self._read(body)

    def stats(self) -> GraphStats:
        def body(gc: GraphConn, rec: SessionRecord) -> tuple[GraphStats, AuditDraft]:
            result = q.stats(gc, q.Scope(rec))
            return result, _read_draft("graph.stats", rec, [], {"nodes": result.nodes, "edges": result.edges})

        return self._read(body)

    def read(self, cursor: str | None = None, limit: int = PAGE_NODES) -> GraphPage:
        """One page of the visible graph, nodes by name; pass ``page.cursor`` for the next."""
        if cursor is not None:
            cursor = checks.check_name(cursor, "cursor")
        limit = clamp_max_results(limit, PAGE_NODES)

        def body(gc: GraphConn, rec: SessionRecord) -> tuple[GraphPage, AuditDraft]:
            nodes, edges, more = q.read_page(gc, q.Scope(rec), cursor, limit, PAGE_EDGES)
            page = GraphPage(tuple(nodes), tuple(edges), nodes[-1].name if more and nodes else None, more)
            return page, _read_draft("graph.read", rec, nodes, {"nodes": len(nodes), "edges": len(edges)})

        return self._read(body)

    def suggest(self, name: str, limit: int = 10) -> list[Suggestion]:
        """Nodes not yet linked to ``name`` that share neighbours or words with it, best first."""
        checked, limit = checks.check_name(name), clamp_max_results(limit, 10)
        analyzer = self._store.analyzer

        def body(gc: GraphConn, rec: SessionRecord) -> tuple[list[Suggestion], AuditDraft]:
            scope = q.Scope(rec)
            start = self._start(gc, scope, checked)
            key = (start.agent_id, start.name)
            reached = traverse.expand(
                [key], 2, lambda keys: q.edges_touching(gc, scope, keys), q.MAX_FRONTIER
            )
            direct = {k for k, d, _ in reached if d == 1}
            shared: dict[tuple[str, str], int] = {}
            if direct:
                for edge in q.edges_touching(gc, scope, sorted(direct)):
                    for end in ((edge.agent_id, edge.source), (edge.agent_id, edge.target)):
                        if end != key and end not in direct:
                            shared[end] = shared.get(end, 0) + 1
            text = " ".join([start.name, start.type, start.content, *(o.text for o in start.observations)])
            terms = analyzer.query_terms(text[:MAX_QUERY_CHARS])
            scores = {(n.agent_id, n.name): s for n, s in q.search(gc, scope, terms, 100)}
            candidates = [k for k in {**shared, **scores} if k != key and k not in direct]
            candidates.sort(key=lambda k: (-shared.get(k, 0), -scores.get(k, 0.0), k[1], scope.rank[k[0]]))
            nodes = q.load_nodes(gc, scope, candidates[:limit])
            out = [
                Suggestion(nodes[k], shared.get(k, 0), scores.get(k, 0.0))
                for k in candidates[:limit]
                if k in nodes
            ]
            return out, _read_draft("graph.suggest", rec, [n.node for n in out], {"results": len(out)})

        return self._read(body)


def rec_now(graph: GraphSession) -> datetime:
    """The store's clock (the fake one in tests), read once per write."""
    return graph._store.now()
