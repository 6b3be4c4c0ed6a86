"""The knowledge graph's storage: connection, visible view and reads, written once for both backends.

Every function takes a ``GraphConn`` (a connection inside a transaction the
backend opened and, on PostgreSQL, bound to the session for row-level
security) and the session record read in that same transaction. The SQL is
plain enough to run unchanged on SQLite and PostgreSQL: named parameters
(``:name``, spelled for the engine by its ``Dialect``), no casts, no JSON
functions. Only the schema and the transaction plumbing differ per backend
(``storage/sqlite/graph.py``, ``storage/postgres/graph.py``).

The visible view. A session sees, of its own agent and its peers, with labels
within its taint (``labels.visible_sql``: level and compartments), not deleted:
- a node version, unless a higher version of the same (agent, name) is also
  visible (shadowing, as for memories);
- an observation, if some version of its (agent, name) is visible;
- an edge, unless shadowed by a higher version of the same (agent, from, to,
  relation), and only if both of its endpoints are visible.
Every read is expressed over exactly that view, and ranking statistics are
computed from it at query time, so no answer depends on a record the session
cannot see. Writes (``graph_write``) touch only the own agent, at exactly the live taint's label.
Shadowing picks the greatest stored integer among visible versions (the label order's extension).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from ...audit import AuditDraft, operator_draft
from ...errors import NotFound
from ...graph import rank
from ...graph.model import Edge, GraphStats, Node, Observation
from ...labels import level_of, visible_params, visible_sql
from ...search import ranking
from ..records import SessionRecord
from .dialect import Dialect
from .rows import from_us, one_row

NODE_COLUMNS = (
    "n.id, n.agent_id, n.name, n.type, n.content, n.tags, n.level, n.source, n.session_id, "
    "n.created_us, n.updated_us, n.length"
)
EDGE_COLUMNS = "e.id, e.agent_id, e.source, e.target, e.relation, e.note, e.level, e.created_us"
CHUNK = 400
MAX_FRONTIER = 2_000  # nodes expanded per traversal step: bounds a neighbourhood query on hub nodes

# The rows that are the graph's truth (postings are derived and rebuilt), in copy order.
COPIED_TABLES: dict[str, str] = {
    "graph_nodes": "id, agent_id, name, level, type, content, tags, source, session_id, created_us, updated_us, "
    "deleted_us",
    "graph_observations": "id, agent_id, name, level, text, session_id, created_us, pos, deleted_us",
    "graph_edges": "id, agent_id, source, target, relation, level, note, session_id, created_us, updated_us, "
    "deleted_us",
}


class GraphConn:
    """A connection in an open transaction, speaking one SQL text (``:name`` parameters) to either engine."""

    def __init__(self, conn: Any, dialect: Dialect) -> None:
        self.conn = conn
        self.dialect = dialect

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(self.dialect.named_sql(sql), params or {}).fetchall())

    def one(self, sql: str, params: dict[str, Any] | None = None) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(self.dialect.named_sql(sql), params or {}).fetchone()
        return row

    def run(self, sql: str, params: dict[str, Any] | None = None) -> None:
        self.conn.execute(self.dialect.named_sql(sql), params or {})

    def many(self, sql: str, seq: Sequence[dict[str, Any]]) -> None:
        if seq:
            self.dialect.executemany(self.conn, self.dialect.named_sql(sql), seq)


class Scope:
    """The session's visible view as SQL fragments and parameters."""

    def __init__(self, record: SessionRecord) -> None:
        self.record = record
        self.agents = record.agents
        self.params: dict[str, Any] = {**visible_params(record.taint_code)}
        for i, agent in enumerate(self.agents):
            self.params[f"a{i}"] = agent
        self.agent_list = ", ".join(f":a{i}" for i in range(len(self.agents)))
        self.rank = {agent: i for i, agent in enumerate(self.agents)}

    def live_name(self, agent: str, name: str) -> str:
        return (
            f"EXISTS (SELECT 1 FROM graph_nodes x WHERE x.agent_id = {agent} AND x.name = {name} "
            f"AND {visible_sql('x.level')} AND x.deleted_us IS NULL)"
        )

    @property
    def node_visible(self) -> str:
        return (
            f"n.agent_id IN ({self.agent_list}) AND {visible_sql('n.level')} AND n.deleted_us IS NULL AND NOT EXISTS "
            f"(SELECT 1 FROM graph_nodes h WHERE h.agent_id = n.agent_id AND h.name = n.name "
            f"AND h.level > n.level AND {visible_sql('h.level')} AND h.deleted_us IS NULL)"
        )

    @property
    def obs_visible(self) -> str:
        return (
            f"o.agent_id IN ({self.agent_list}) AND {visible_sql('o.level')} AND o.deleted_us IS NULL AND "
            + self.live_name("o.agent_id", "o.name")
        )

    @property
    def edge_current(self) -> str:
        """An edge version in scope and not shadowed; the edge rule also needs both endpoints live."""
        return (
            f"e.agent_id IN ({self.agent_list}) AND {visible_sql('e.level')} AND e.deleted_us IS NULL AND NOT EXISTS "
            f"(SELECT 1 FROM graph_edges h WHERE h.agent_id = e.agent_id AND h.source = e.source "
            f"AND h.target = e.target AND h.relation = e.relation AND h.level > e.level AND {visible_sql('h.level')} "
            f"AND h.deleted_us IS NULL)"
        )

    @property
    def edge_visible(self) -> str:
        return (
            f"{self.edge_current} AND {self.live_name('e.agent_id', 'e.source')} "
            f"AND {self.live_name('e.agent_id', 'e.target')}"
        )


def _in(prefix: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    params = {f"{prefix}{i}": v for i, v in enumerate(values)}
    return ", ".join(f":{p}" for p in params), params


def _chunks(values: Sequence[Any], size: int = CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


# ---------------------------------------------------------------------------------- rows → records


def _node(row: Sequence[Any], observations: tuple[Observation, ...] = ()) -> Node:
    tags = () if row[5] == "[]" else tuple(json.loads(row[5]))
    return Node(
        id=row[0],
        agent_id=row[1],
        name=row[2],
        type=row[3],
        content=row[4],
        tags=tags,
        level=level_of(row[6]),
        source=row[7],
        session_id=row[8],
        created_at=from_us(row[9]),
        updated_at=from_us(row[10]),
        observations=observations,
    )


def _edge(row: Sequence[Any]) -> Edge:
    return Edge(
        id=row[0],
        agent_id=row[1],
        source=row[2],
        target=row[3],
        relation=row[4],
        note=row[5],
        level=level_of(row[6]),
        created_at=from_us(row[7]),
    )


def _edge_order(scope: Scope, edges: Iterable[Edge]) -> list[Edge]:
    return sorted(edges, key=lambda e: (e.source, e.relation, e.target, scope.rank.get(e.agent_id, 0)))


# ---------------------------------------------------------------------------------- reads


def visible_version(gc: GraphConn, scope: Scope, agent: str, name: str) -> tuple[Any, ...] | None:
    """The row a session sees for (agent, name), or None (missing and invisible look the same)."""
    return gc.one(
        f"SELECT {NODE_COLUMNS} FROM graph_nodes n WHERE n.agent_id = :ag AND n.name = :name "
        f"AND {visible_sql('n.level')} AND n.deleted_us IS NULL ORDER BY n.level DESC LIMIT 1",
        {**scope.params, "ag": agent, "name": name},
    )


def load_nodes(gc: GraphConn, scope: Scope, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Node]:
    """The visible nodes among ``keys`` with their visible observations (each text once, oldest first)."""
    by_agent: dict[str, list[str]] = defaultdict(list)
    for agent, name in dict.fromkeys(keys):
        if agent in scope.rank:
            by_agent[agent].append(name)
    rows: dict[tuple[str, str], tuple[Any, ...]] = {}
    observed: dict[tuple[str, str], dict[str, Observation]] = defaultdict(dict)
    for agent, names in by_agent.items():
        for chunk in _chunks(names):
            marks, params = _in("k", chunk)
            for row in gc.rows(
                f"SELECT {NODE_COLUMNS} FROM graph_nodes n WHERE n.agent_id = :ag "
                f"AND n.name IN ({marks}) AND {scope.node_visible}",
                {**scope.params, **params, "ag": agent},
            ):
                rows[(row[1], row[2])] = row
            for name, text, level, created in gc.rows(
                f"SELECT o.name, o.text, o.level, o.created_us FROM graph_observations o WHERE o.agent_id = :ag "
                f"AND o.name IN ({marks}) AND {visible_sql('o.level')} AND o.deleted_us IS NULL "
                "ORDER BY o.name, o.created_us, o.pos, o.text",
                {**scope.params, **params, "ag": agent},
            ):
                seen = observed[(agent, name)]
                if text not in seen:
                    seen[text] = Observation(text, level_of(level), from_us(created))
    return {key: _node(row, tuple(observed[key].values())) for key, row in rows.items()}


def named(gc: GraphConn, scope: Scope, names: Sequence[str]) -> list[Node]:
    """Visible nodes with these names, in the order asked, own agent before peers."""
    keys = [(agent, name) for name in names for agent in scope.agents]
    found = load_nodes(gc, scope, keys)
    return [found[k] for k in keys if k in found]


def edges_touching(
    gc: GraphConn, scope: Scope, keys: Sequence[tuple[str, str]], limit: int | None = None
) -> list[Edge]:
    """Visible edges with an endpoint among ``keys`` (both endpoints visible, by the edge rule).

    ``keys`` must be nodes visible in this snapshot (every caller passes nodes it loaded, or reached
    through visible edges): an endpoint among them is therefore live, and only the other end is tested.
    One query per agent and chunk finds edges either way: those from ``keys`` (index on source), then
    those into ``keys`` from elsewhere (index on target), so no edge comes twice.
    """
    by_agent: dict[str, list[str]] = defaultdict(list)
    for agent, name in dict.fromkeys(keys):
        if agent in scope.rank:
            by_agent[agent].append(name)
    found: dict[str, Edge] = {}
    for agent, names in by_agent.items():
        for chunk in _chunks(names):
            marks, params = _in("k", chunk)
            for row in gc.rows(
                f"SELECT {EDGE_COLUMNS} FROM graph_edges e WHERE e.agent_id = :ag AND e.source IN ({marks}) "
                f"AND {scope.edge_current} AND (e.target IN ({marks}) "
                f"OR {scope.live_name('e.agent_id', 'e.target')}) UNION ALL "
                f"SELECT {EDGE_COLUMNS} FROM graph_edges e WHERE e.agent_id = :ag AND e.target IN ({marks}) "
                f"AND e.source NOT IN ({marks}) AND {scope.edge_current} "
                f"AND {scope.live_name('e.agent_id', 'e.source')}",
                {**scope.params, **params, "ag": agent},
            ):
                found.setdefault(row[0], _edge(row))
    edges = _edge_order(scope, found.values())
    return edges if limit is None else edges[:limit]


def _hidden(gc: GraphConn, scope: Scope) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """In-scope live rows the session does not see: shadowed node versions and orphaned observations."""
    shadowed = gc.rows(
        f"SELECT n.id, n.length FROM graph_nodes n WHERE n.multi = 1 AND n.deleted_us IS NULL "
        f"AND n.agent_id IN ({scope.agent_list}) AND {visible_sql('n.level')} AND NOT ({scope.node_visible})",
        scope.params,
    )
    orphans = gc.rows(
        f"SELECT o.id, o.length FROM graph_observations o WHERE o.anchored = 0 AND o.deleted_us IS NULL "
        f"AND o.agent_id IN ({scope.agent_list}) AND {visible_sql('o.level')} "
        f"AND NOT {scope.live_name('o.agent_id', 'o.name')}",
        scope.params,
    )
    return shadowed, orphans


MAX_HIDDEN_PARAMS = 500


def visible_stats(gc: GraphConn, scope: Scope) -> tuple[int, int, list[str]]:
    """(visible nodes, their total document length, ids of the in-scope rows the session cannot see)."""
    nodes, node_len, obs_len = (
        int(v)
        for v in one_row(
            gc.one(
                f"SELECT coalesce(sum(nodes), 0), coalesce(sum(node_len), 0), coalesce(sum(obs_len), 0) "
                f"FROM graph_part_stats WHERE agent_id IN ({scope.agent_list}) AND {visible_sql('level')}",
                scope.params,
            )
        )
    )
    shadowed, orphans = _hidden(gc, scope)
    total = node_len - sum(r[1] for r in shadowed) + obs_len - sum(r[1] for r in orphans)
    return nodes - len(shadowed), total, [r[0] for r in shadowed + orphans]


def matches(
    gc: GraphConn, scope: Scope, terms: Sequence[str], hidden: Sequence[str]
) -> tuple[list[tuple[str, str, str, int]], dict[tuple[str, str], int]]:
    """(term, agent, name, tf) of every visible node matching a term, and each one's visible document
    length: its visible version (shadowing lower ones) plus its visible observations.

    ``hidden`` are the in-scope unit ids the session cannot see (``visible_stats``). One query: the
    lengths come from covering indexes on SQLite; a node with no visible version does not match.
    """
    marks, term_params = _in("t", list(terms))
    params = {**scope.params, **term_params}
    if len(hidden) <= MAX_HIDDEN_PARAMS:
        hmarks, hparams = _in("h", hidden)
        unit_visible = f"p.unit_id NOT IN ({hmarks})" if hidden else "1 = 1"
        params.update(hparams)
    else:  # many hidden rows: test each posting instead
        unit_visible = (
            f"((p.kind = 'o' AND {scope.live_name('p.agent_id', 'p.name')}) OR (p.kind = 'n' AND NOT EXISTS "
            f"(SELECT 1 FROM graph_nodes h WHERE h.agent_id = p.agent_id AND h.name = p.name AND h.level > p.level "
            f"AND {visible_sql('h.level')} AND h.deleted_us IS NULL)))"
        )
    postings: list[tuple[str, str, str, int]] = []
    lengths: dict[tuple[str, str], int] = {}
    for term, agent, name, tf, node_len, obs_len in gc.rows(
        f"WITH hits AS (SELECT p.term, p.agent_id, p.name, sum(p.tf) AS tf FROM graph_postings p "
        f"WHERE p.term IN ({marks}) AND p.agent_id IN ({scope.agent_list}) AND {visible_sql('p.level')} "
        f"AND {unit_visible} GROUP BY p.term, p.agent_id, p.name) "
        "SELECT h.term, h.agent_id, h.name, h.tf, (SELECT n.length FROM graph_nodes n "
        f"WHERE n.agent_id = h.agent_id AND n.name = h.name AND {visible_sql('n.level')} AND n.deleted_us IS NULL "
        "ORDER BY n.level DESC LIMIT 1), (SELECT coalesce(sum(o.length), 0) FROM graph_observations o "
        f"WHERE o.agent_id = h.agent_id AND o.name = h.name AND {visible_sql('o.level')} AND o.deleted_us IS NULL) "
        "FROM hits h",
        params,
    ):
        if node_len is not None:
            postings.append((term, agent, name, int(tf)))
            lengths[(agent, name)] = int(node_len) + int(obs_len)
    return postings, lengths


def search(gc: GraphConn, scope: Scope, terms: Sequence[str], limit: int) -> list[tuple[Node, float]]:
    """BM25 over visible nodes (name, type, content, tags and visible observations).

    Statistics come from the partitions the session may read (``graph_part_stats``) minus the few
    in-scope rows it cannot see (found through the ``multi``/``anchored`` flags), so they cover
    exactly the visible view without scanning it.
    """
    if not terms:
        return []
    n_docs, total, hidden = visible_stats(gc, scope)
    if n_docs <= 0:
        return []
    postings, lengths = matches(gc, scope, terms, hidden)
    ranked = rank.score_nodes(n_docs, total, postings, lengths, scope.agents)[:limit]
    found = load_nodes(gc, scope, [key for key, _ in ranked])
    return [(found[key], score / ranking.SCORE_SCALE) for key, score in ranked if key in found]


def read_page(
    gc: GraphConn, scope: Scope, after: str | None, limit: int, edge_limit: int
) -> tuple[list[Node], list[Edge], bool]:
    """Visible nodes ordered by name (then agent order) after the name ``after``, and edges from them."""
    rows = gc.rows(
        f"SELECT n.agent_id, n.name FROM graph_nodes n WHERE {scope.node_visible} "
        + ("AND n.name > :after " if after is not None else "")
        + "ORDER BY n.name LIMIT :lim",
        {**scope.params, "after": after, "lim": limit * len(scope.agents) + 1},
    )
    names = list(dict.fromkeys(name for _, name in rows))
    more = len(names) > limit
    names = names[:limit]
    nodes = named(gc, scope, names)
    nodes.sort(key=lambda n: (n.name, scope.rank[n.agent_id]))
    edges = [
        e
        for e in edges_touching(gc, scope, [(n.agent_id, n.name) for n in nodes])
        if (e.agent_id, e.source) in {(n.agent_id, n.name) for n in nodes}
    ]
    return nodes, edges[:edge_limit], more or len(edges) > edge_limit


def stats(gc: GraphConn, scope: Scope, top: int = 10) -> GraphStats:
    nodes = one_row(gc.one(f"SELECT count(*) FROM graph_nodes n WHERE {scope.node_visible}", scope.params))[0]
    observations = one_row(
        gc.one(
            f"SELECT count(*) FROM (SELECT DISTINCT o.agent_id, o.name, o.text FROM graph_observations o "
            f"WHERE {scope.obs_visible}) d",
            scope.params,
        )
    )[0]
    edges = one_row(gc.one(f"SELECT count(*) FROM graph_edges e WHERE {scope.edge_visible}", scope.params))[0]
    types = gc.rows(
        f"SELECT n.type, count(*) AS c FROM graph_nodes n WHERE {scope.node_visible} "
        "GROUP BY n.type ORDER BY c DESC, n.type LIMIT :top",
        {**scope.params, "top": top},
    )
    relations = gc.rows(
        f"SELECT e.relation, count(*) AS c FROM graph_edges e WHERE {scope.edge_visible} "
        "GROUP BY e.relation ORDER BY c DESC, e.relation LIMIT :top",
        {**scope.params, "top": top},
    )
    return GraphStats(
        nodes, edges, observations, tuple((t, c) for t, c in types), tuple((r, c) for r, c in relations)
    )


class NodeNotFound(NotFound):
    """NOT_FOUND naming the node asked for (the caller's own words, nothing about what is stored)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no node named {name!r}")
        self.name = name


def not_found(name: str) -> NodeNotFound:
    """One message for a node that is missing and one that is invisible: they must look the same."""
    return NodeNotFound(name)


def export_view(
    gc: GraphConn,
    agent: str,
    label: int,
    now: datetime,
    render: Callable[[list[Node], list[Edge]], list[str]],
) -> tuple[list[str], AuditDraft]:
    """Operator export: every node and edge of ``agent`` a session at ``label`` (a stored label) sees, page
    by page."""
    level = level_of(label)
    scope = Scope(
        SessionRecord("export", agent, level, (), level, now, clearance_code=label, taint_code=label)
    )
    nodes: list[Node] = []
    edges: list[Edge] = []
    after = None
    while True:
        page, page_edges, more = read_page(gc, scope, after, 500, 10**9)
        nodes += page
        edges += page_edges
        if not more or not page:
            break
        after = page[-1].name
    return render(nodes, edges), operator_draft(
        "graph.export", agent_id=agent, levels=(level,), detail={"nodes": len(nodes), "edges": len(edges)}
    )
