"""The knowledge graph's storage operations, written once for both backends.

Every function takes a ``GraphConn`` (a connection inside a transaction the
backend opened and, on PostgreSQL, bound to the session for row-level
security) and the session record read in that same transaction. The SQL is
plain enough to run unchanged on SQLite and PostgreSQL: named parameters
(``:name``, rewritten to ``%(name)s`` for psycopg), no casts, no JSON
functions. Only the schema and the transaction plumbing differ per backend
(``sqlite_graph.py``, ``pg_graph.py``).

The visible view. A session sees, of its own agent and its peers, at levels
<= its taint, not deleted:
- a node version, unless a higher version of the same (agent, name) is also
  visible (shadowing, as for memories);
- an observation, if some version of its (agent, name) is visible;
- an edge, unless shadowed by a higher version of the same (agent, from, to,
  relation), and only if both of its endpoints are visible.
Every read is expressed over exactly that view, and ranking statistics are
computed from it at query time, so no answer depends on a record the session
cannot see. Writes touch only the own agent, at exactly the live taint.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from .. import ranking
from ..audit import AuditDraft, operator_draft
from ..errors import NotFound, ValidationError
from ..graph import rank
from ..graph.checks import DEFAULT_TYPE, MAX_OBSERVATIONS_PER_NODE
from ..graph.model import Edge, EdgeDraft, GraphStats, Node, NodeDraft, Observation
from ..levels import Level
from ..text import Analyzer
from .base import SessionRecord
from .rows import from_us, to_us

NODE_COLUMNS = ("n.id, n.agent_id, n.name, n.type, n.content, n.tags, n.level, n.source, n.session_id, "
                "n.created_us, n.updated_us, n.length")
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


@lru_cache(maxsize=512)
def _pyformat(sql: str) -> str:
    return re.sub(r"(?<![:\w]):([A-Za-z_]\w*)", r"%(\1)s", sql)


class GraphConn:
    """A connection in an open transaction, speaking one SQL text to either backend."""

    def __init__(self, conn: Any, postgres: bool) -> None:
        self.conn = conn
        self.postgres = postgres

    def _sql(self, sql: str) -> str:
        return _pyformat(sql) if self.postgres else sql

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple]:
        return list(self.conn.execute(self._sql(sql), params or {}).fetchall())

    def one(self, sql: str, params: dict[str, Any] | None = None) -> tuple | None:
        return self.conn.execute(self._sql(sql), params or {}).fetchone()

    def run(self, sql: str, params: dict[str, Any] | None = None) -> None:
        self.conn.execute(self._sql(sql), params or {})

    def many(self, sql: str, seq: Sequence[dict[str, Any]]) -> None:
        if not seq:
            return
        if self.postgres:
            with self.conn.cursor() as cur:
                cur.executemany(self._sql(sql), seq)
        else:
            self.conn.executemany(sql, seq)


class Scope:
    """The session's visible view as SQL fragments and parameters."""

    def __init__(self, record: SessionRecord) -> None:
        self.record = record
        self.agents = record.agents
        self.params: dict[str, Any] = {"lvl": int(record.taint)}
        for i, agent in enumerate(self.agents):
            self.params[f"a{i}"] = agent
        self.agent_list = ", ".join(f":a{i}" for i in range(len(self.agents)))
        self.rank = {agent: i for i, agent in enumerate(self.agents)}

    def live_name(self, agent: str, name: str) -> str:
        return (f"EXISTS (SELECT 1 FROM graph_nodes x WHERE x.agent_id = {agent} AND x.name = {name} "
                f"AND x.level <= :lvl AND x.deleted_us IS NULL)")

    @property
    def node_visible(self) -> str:
        return (f"n.agent_id IN ({self.agent_list}) AND n.level <= :lvl AND n.deleted_us IS NULL AND NOT EXISTS "
                f"(SELECT 1 FROM graph_nodes h WHERE h.agent_id = n.agent_id AND h.name = n.name "
                f"AND h.level > n.level AND h.level <= :lvl AND h.deleted_us IS NULL)")

    @property
    def obs_visible(self) -> str:
        return (f"o.agent_id IN ({self.agent_list}) AND o.level <= :lvl AND o.deleted_us IS NULL AND "
                + self.live_name("o.agent_id", "o.name"))

    @property
    def edge_visible(self) -> str:
        return (f"e.agent_id IN ({self.agent_list}) AND e.level <= :lvl AND e.deleted_us IS NULL AND NOT EXISTS "
                f"(SELECT 1 FROM graph_edges h WHERE h.agent_id = e.agent_id AND h.source = e.source "
                f"AND h.target = e.target AND h.relation = e.relation AND h.level > e.level AND h.level <= :lvl "
                f"AND h.deleted_us IS NULL) AND {self.live_name('e.agent_id', 'e.source')} "
                f"AND {self.live_name('e.agent_id', 'e.target')}")


def _in(prefix: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    params = {f"{prefix}{i}": v for i, v in enumerate(values)}
    return ", ".join(f":{p}" for p in params), params


def _chunks(values: Sequence[Any], size: int = CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start:start + size]


# ---------------------------------------------------------------------------------- rows → records


_LEVELS = tuple(Level)


def _node(row: Sequence, observations: tuple[Observation, ...] = ()) -> Node:
    tags = () if row[5] == "[]" else tuple(json.loads(row[5]))
    return Node(id=row[0], agent_id=row[1], name=row[2], type=row[3], content=row[4], tags=tags,
                level=_LEVELS[row[6]], source=row[7], session_id=row[8], created_at=from_us(row[9]),
                updated_at=from_us(row[10]), observations=observations)


def _edge(row: Sequence) -> Edge:
    return Edge(id=row[0], agent_id=row[1], source=row[2], target=row[3], relation=row[4], note=row[5],
                level=_LEVELS[row[6]], created_at=from_us(row[7]))


def _edge_order(scope: Scope, edges: Iterable[Edge]) -> list[Edge]:
    return sorted(edges, key=lambda e: (e.source, e.relation, e.target, scope.rank.get(e.agent_id, 0)))


# ---------------------------------------------------------------------------------- reads


def visible_version(gc: GraphConn, scope: Scope, agent: str, name: str) -> tuple | None:
    """The row a session sees for (agent, name), or None (missing and invisible look the same)."""
    return gc.one(f"SELECT {NODE_COLUMNS} FROM graph_nodes n WHERE n.agent_id = :ag AND n.name = :name "
                  "AND n.level <= :lvl AND n.deleted_us IS NULL ORDER BY n.level DESC LIMIT 1",
                  {**scope.params, "ag": agent, "name": name})


def load_nodes(gc: GraphConn, scope: Scope, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Node]:
    """The visible nodes among ``keys`` with their visible observations (each text once, oldest first)."""
    by_agent: dict[str, list[str]] = defaultdict(list)
    for agent, name in dict.fromkeys(keys):
        if agent in scope.rank:
            by_agent[agent].append(name)
    rows: dict[tuple[str, str], tuple] = {}
    observed: dict[tuple[str, str], dict[str, Observation]] = defaultdict(dict)
    for agent, names in by_agent.items():
        for chunk in _chunks(names):
            marks, params = _in("k", chunk)
            for row in gc.rows(f"SELECT {NODE_COLUMNS} FROM graph_nodes n WHERE n.agent_id = :ag "
                               f"AND n.name IN ({marks}) AND {scope.node_visible}",
                               {**scope.params, **params, "ag": agent}):
                rows[(row[1], row[2])] = row
            for name, text, level, created in gc.rows(
                    f"SELECT o.name, o.text, o.level, o.created_us FROM graph_observations o WHERE o.agent_id = :ag "
                    f"AND o.name IN ({marks}) AND o.level <= :lvl AND o.deleted_us IS NULL "
                    "ORDER BY o.name, o.created_us, o.pos, o.text",
                    {**scope.params, **params, "ag": agent}):
                seen = observed[(agent, name)]
                if text not in seen:
                    seen[text] = Observation(text, _LEVELS[level], from_us(created))
    return {key: _node(row, tuple(observed[key].values())) for key, row in rows.items()}


def named(gc: GraphConn, scope: Scope, names: Sequence[str]) -> list[Node]:
    """Visible nodes with these names, in the order asked, own agent before peers."""
    keys = [(agent, name) for name in names for agent in scope.agents]
    found = load_nodes(gc, scope, keys)
    return [found[k] for k in keys if k in found]


def edges_touching(gc: GraphConn, scope: Scope, keys: Sequence[tuple[str, str]], limit: int | None = None) -> list[Edge]:
    """Visible edges with an endpoint among ``keys`` (both endpoints visible, by the edge rule)."""
    by_agent: dict[str, list[str]] = defaultdict(list)
    for agent, name in dict.fromkeys(keys):
        by_agent[agent].append(name)
    found: dict[str, Edge] = {}
    for agent, names in by_agent.items():
        for chunk in _chunks(names):
            marks, params = _in("k", chunk)
            for column in ("source", "target"):
                for row in gc.rows(f"SELECT {EDGE_COLUMNS} FROM graph_edges e WHERE e.agent_id = :ag "
                                   f"AND e.{column} IN ({marks}) AND {scope.edge_visible}",
                                   {**scope.params, **params, "ag": agent}):
                    found.setdefault(row[0], _edge(row))
    edges = _edge_order(scope, found.values())
    return edges if limit is None else edges[:limit]


def _hidden(gc: GraphConn, scope: Scope) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """In-scope live rows the session does not see: shadowed node versions and orphaned observations."""
    shadowed = gc.rows(f"SELECT n.id, n.length FROM graph_nodes n WHERE n.multi = 1 AND n.deleted_us IS NULL "
                       f"AND n.agent_id IN ({scope.agent_list}) AND n.level <= :lvl AND NOT ({scope.node_visible})",
                       scope.params)
    orphans = gc.rows(f"SELECT o.id, o.length FROM graph_observations o WHERE o.anchored = 0 AND o.deleted_us IS NULL "
                      f"AND o.agent_id IN ({scope.agent_list}) AND o.level <= :lvl "
                      f"AND NOT {scope.live_name('o.agent_id', 'o.name')}", scope.params)
    return shadowed, orphans


MAX_HIDDEN_PARAMS = 500


def visible_stats(gc: GraphConn, scope: Scope) -> tuple[int, int, list[str]]:
    """(visible nodes, their total document length, ids of the in-scope rows the session cannot see)."""
    nodes, node_len, obs_len = (int(v) for v in gc.one(
        f"SELECT coalesce(sum(nodes), 0), coalesce(sum(node_len), 0), coalesce(sum(obs_len), 0) "
        f"FROM graph_part_stats WHERE agent_id IN ({scope.agent_list}) AND level <= :lvl", scope.params))
    shadowed, orphans = _hidden(gc, scope)
    total = node_len - sum(r[1] for r in shadowed) + obs_len - sum(r[1] for r in orphans)
    return nodes - len(shadowed), total, [r[0] for r in shadowed + orphans]


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
            f"AND h.level <= :lvl AND h.deleted_us IS NULL)))")
    postings = [(t, a, n, int(tf)) for t, a, n, tf in gc.rows(
        f"SELECT p.term, p.agent_id, p.name, sum(p.tf) FROM graph_postings p "
        f"WHERE p.term IN ({marks}) AND p.agent_id IN ({scope.agent_list}) AND p.level <= :lvl "
        f"AND {unit_visible} GROUP BY p.term, p.agent_id, p.name", params)]
    lengths = _doc_lengths(gc, scope, sorted({(agent, name) for _, agent, name, _ in postings}))
    ranked = rank.score_nodes(n_docs, total, postings, lengths, scope.agents)[:limit]
    found = load_nodes(gc, scope, [key for key, _ in ranked])
    return [(found[key], score / ranking.SCORE_SCALE) for key, score in ranked if key in found]


def _doc_lengths(gc: GraphConn, scope: Scope, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Visible document length (visible version + visible observations) of each visible node among ``keys``."""
    lengths: dict[tuple[str, str], int] = {}
    for agent in scope.agents:
        names = [name for a, name in keys if a == agent]
        for chunk in _chunks(names):
            kmarks, kparams = _in("k", chunk)
            args = {**scope.params, **kparams, "ag": agent}
            best: dict[str, tuple[int, int]] = {}
            for name, level, length in gc.rows(
                    f"SELECT name, level, length FROM graph_nodes WHERE agent_id = :ag AND name IN ({kmarks}) "
                    "AND level <= :lvl AND deleted_us IS NULL", args):
                if name not in best or level > best[name][0]:
                    best[name] = (level, length)
            for name, (_, length) in best.items():
                lengths[(agent, name)] = length
            for name, total in gc.rows(
                    f"SELECT name, sum(length) FROM graph_observations WHERE agent_id = :ag AND name IN ({kmarks}) "
                    "AND level <= :lvl AND deleted_us IS NULL GROUP BY name", args):
                if (agent, name) in lengths:
                    lengths[(agent, name)] += int(total)
    return lengths


def read_page(gc: GraphConn, scope: Scope, after: str | None, limit: int, edge_limit: int
              ) -> tuple[list[Node], list[Edge], bool]:
    """Visible nodes ordered by name (then agent order) after the name ``after``, and edges from them."""
    rows = gc.rows(f"SELECT n.agent_id, n.name FROM graph_nodes n WHERE {scope.node_visible} "
                   + ("AND n.name > :after " if after is not None else "")
                   + "ORDER BY n.name LIMIT :lim",
                   {**scope.params, "after": after, "lim": limit * len(scope.agents) + 1})
    names = list(dict.fromkeys(name for _, name in rows))
    more = len(names) > limit
    names = names[:limit]
    nodes = named(gc, scope, names)
    nodes.sort(key=lambda n: (n.name, scope.rank[n.agent_id]))
    edges = [e for e in edges_touching(gc, scope, [(n.agent_id, n.name) for n in nodes])
             if (e.agent_id, e.source) in {(n.agent_id, n.name) for n in nodes}]
    return nodes, edges[:edge_limit], more or len(edges) > edge_limit


def stats(gc: GraphConn, scope: Scope, top: int = 10) -> GraphStats:
    nodes = gc.one(f"SELECT count(*) FROM graph_nodes n WHERE {scope.node_visible}", scope.params)[0]
    observations = gc.one(
        f"SELECT count(*) FROM (SELECT DISTINCT o.agent_id, o.name, o.text FROM graph_observations o "
        f"WHERE {scope.obs_visible}) d", scope.params)[0]
    edges = gc.one(f"SELECT count(*) FROM graph_edges e WHERE {scope.edge_visible}", scope.params)[0]
    types = gc.rows(f"SELECT n.type, count(*) AS c FROM graph_nodes n WHERE {scope.node_visible} "
                    "GROUP BY n.type ORDER BY c DESC, n.type LIMIT :top", {**scope.params, "top": top})
    relations = gc.rows(f"SELECT e.relation, count(*) AS c FROM graph_edges e WHERE {scope.edge_visible} "
                        "GROUP BY e.relation ORDER BY c DESC, e.relation LIMIT :top", {**scope.params, "top": top})
    return GraphStats(nodes, edges, observations, tuple((t, c) for t, c in types), tuple((r, c) for r, c in relations))


# ---------------------------------------------------------------------------------- index upkeep


INSERT_POSTING = ("INSERT INTO graph_postings (term, unit_id, kind, agent_id, name, level, tf) "
                  "VALUES (:term, :unit, :kind, :agent, :name, :level, :tf)")


def _postings(unit_id: str, kind: str, agent: str, name: str, level: int, terms: dict[str, int]) -> list[dict]:
    return [{"term": t, "unit": unit_id, "kind": kind, "agent": agent, "name": name, "level": level, "tf": tf}
            for t, tf in terms.items()]


def _index(gc: GraphConn, unit_id: str, kind: str, agent: str, name: str, level: int, terms: dict[str, int]) -> None:
    gc.many(INSERT_POSTING, _postings(unit_id, kind, agent, name, level, terms))


# Keeps, for one (agent, name), which live versions some higher live version may shadow (``multi``) and
# which observations lost every live version at or below their own level (``anchored`` = 0). Searches
# subtract exactly those rows from the partition statistics. It writes flags on rows of other levels,
# so on PostgreSQL it runs as the SECURITY DEFINER function sm_graph_refresh with this same body.
REFRESH_SQL = (
    "UPDATE graph_nodes SET multi = CASE WHEN (SELECT count(*) FROM graph_nodes h WHERE h.agent_id = {ag} "
    "AND h.name = {name} AND h.deleted_us IS NULL) > 1 THEN 1 ELSE 0 END "
    "WHERE agent_id = {ag} AND name = {name} AND deleted_us IS NULL",
    "UPDATE graph_observations SET anchored = CASE WHEN EXISTS (SELECT 1 FROM graph_nodes x WHERE x.agent_id = {ag} "
    "AND x.name = {name} AND x.level <= graph_observations.level AND x.deleted_us IS NULL) THEN 1 ELSE 0 END "
    "WHERE agent_id = {ag} AND name = {name} AND deleted_us IS NULL",
)


def _refresh(gc: GraphConn, agent: str, name: str) -> None:
    if gc.postgres:
        gc.run("SELECT sm_graph_refresh(:ag, :name)", {"ag": agent, "name": name})
        return
    for statement in REFRESH_SQL:
        gc.run(statement.format(ag=":ag", name=":name"), {"ag": agent, "name": name})


def _stats_add(gc: GraphConn, agent: str, level: int, nodes: int = 0, node_len: int = 0, obs_len: int = 0) -> None:
    """Per (agent, level) counts a writer keeps for its own partition (the level it writes at)."""
    gc.run("INSERT INTO graph_part_stats (agent_id, level, nodes, node_len, obs_len) "
           "VALUES (:ag, :lvl, :n, :nl, :ol) ON CONFLICT (agent_id, level) DO UPDATE SET "
           "nodes = graph_part_stats.nodes + excluded.nodes, node_len = graph_part_stats.node_len + excluded.node_len, "
           "obs_len = graph_part_stats.obs_len + excluded.obs_len",
           {"ag": agent, "lvl": level, "n": nodes, "nl": node_len, "ol": obs_len})


def _node_terms(analyzer: Analyzer, name: str, type_: str, content: str, tags: Sequence[str]):
    return analyzer.document_terms(name, f"{type_} {content}", tags)


def reindex(gc: GraphConn, analyzer: Analyzer) -> None:
    """Rebuild postings and lengths from the live rows (after a restore or a change of languages)."""
    gc.run("DELETE FROM graph_postings")
    for unit, agent, name, level, type_, content, tags in gc.rows(
            "SELECT id, agent_id, name, level, type, content, tags FROM graph_nodes WHERE deleted_us IS NULL"):
        terms, length = _node_terms(analyzer, name, type_, content, json.loads(tags))
        gc.run("UPDATE graph_nodes SET length = :len WHERE id = :id", {"len": length, "id": unit})
        _index(gc, unit, "n", agent, name, level, terms)
    for unit, agent, name, level, text in gc.rows(
            "SELECT id, agent_id, name, level, text FROM graph_observations WHERE deleted_us IS NULL"):
        terms, length = analyzer.document_terms("", text, ())
        gc.run("UPDATE graph_observations SET length = :len WHERE id = :id", {"len": length, "id": unit})
        _index(gc, unit, "o", agent, name, level, terms)
    gc.run("DELETE FROM graph_part_stats")
    gc.run("INSERT INTO graph_part_stats (agent_id, level, nodes, node_len, obs_len) "
           "SELECT agent_id, level, count(*), sum(length), 0 FROM graph_nodes WHERE deleted_us IS NULL "
           "GROUP BY agent_id, level")
    for agent, level, total in gc.rows("SELECT agent_id, level, sum(length) FROM graph_observations "
                                       "WHERE deleted_us IS NULL GROUP BY agent_id, level"):
        _stats_add(gc, agent, level, obs_len=int(total))
    for statement in REFRESH_SQL:
        gc.run(statement.format(ag="graph_nodes.agent_id", name="graph_nodes.name").replace(
            "WHERE agent_id = graph_nodes.agent_id AND name = graph_nodes.name AND", "WHERE")
            if statement.startswith("UPDATE graph_nodes") else
            statement.format(ag="graph_observations.agent_id", name="graph_observations.name").replace(
            "WHERE agent_id = graph_observations.agent_id AND name = graph_observations.name AND", "WHERE"))


# ---------------------------------------------------------------------------------- writes


def _insert_node(gc: GraphConn, analyzer: Analyzer, agent: str, level: int, draft: NodeDraft,
                 session_id: str | None, now_us: int, created_us: int | None = None) -> str:
    unit = str(uuid.uuid4())
    terms, length = _node_terms(analyzer, draft.name, draft.type, draft.content, draft.tags)
    gc.run("INSERT INTO graph_nodes (id, agent_id, name, level, type, content, tags, source, session_id, created_us, "
           "updated_us, length) VALUES (:id, :agent, :name, :level, :type, :content, :tags, :source, :session, "
           ":created, :now, :len)",
           {"id": unit, "agent": agent, "name": draft.name, "level": level, "type": draft.type,
            "content": draft.content, "tags": json.dumps(list(draft.tags)), "source": draft.source,
            "session": session_id, "created": created_us or now_us, "now": now_us, "len": length})
    _index(gc, unit, "n", agent, draft.name, level, terms)
    _stats_add(gc, agent, level, 1, length)
    _refresh(gc, agent, draft.name)
    return unit


def _update_node(gc: GraphConn, analyzer: Analyzer, row: Sequence, draft: NodeDraft, now_us: int) -> None:
    terms, length = _node_terms(analyzer, draft.name, draft.type, draft.content, draft.tags)
    _stats_add(gc, row[1], row[6], 0, length - row[11])
    gc.run("DELETE FROM graph_postings WHERE unit_id = :id", {"id": row[0]})
    gc.run("UPDATE graph_nodes SET type = :type, content = :content, tags = :tags, source = :source, "
           "updated_us = :now, length = :len WHERE id = :id",
           {"type": draft.type, "content": draft.content, "tags": json.dumps(list(draft.tags)),
            "source": draft.source, "now": now_us, "len": length, "id": row[0]})
    _index(gc, row[0], "n", row[1], row[2], row[6], terms)


def _add_observations(gc: GraphConn, analyzer: Analyzer, scope: Scope, agent: str, level: int, name: str,
                      texts: Sequence[str], session_id: str | None, now_us: int) -> tuple[list[str], int]:
    """Store the texts not already visible on (agent, name); returns those added, in order, and how many were there."""
    existing = {t for (t,) in gc.rows("SELECT o.text FROM graph_observations o WHERE o.agent_id = :ag "
                                       "AND o.name = :name AND o.level <= :lvl AND o.deleted_us IS NULL",
                                       {**scope.params, "ag": agent, "name": name})}
    added = [t for t in dict.fromkeys(texts) if t not in existing]
    if len(existing) + len(added) > MAX_OBSERVATIONS_PER_NODE:
        raise ValidationError(f"node {name!r} would hold more than {MAX_OBSERVATIONS_PER_NODE} observations")
    rows, postings = [], []
    for pos, text in enumerate(added):
        unit = str(uuid.uuid4())
        terms, length = analyzer.document_terms("", text, ())
        rows.append({"id": unit, "agent": agent, "name": name, "level": level, "text": text, "session": session_id,
                     "now": now_us, "pos": pos, "len": length})
        postings += _postings(unit, "o", agent, name, level, terms)
    gc.many("INSERT INTO graph_observations (id, agent_id, name, level, text, session_id, created_us, pos, "
            "length) VALUES (:id, :agent, :name, :level, :text, :session, :now, :pos, :len)", rows)
    gc.many(INSERT_POSTING, postings)
    if rows:
        _stats_add(gc, agent, level, obs_len=sum(r["len"] for r in rows))
    return added, len(existing)


class NodeNotFound(NotFound):
    """NOT_FOUND naming the node asked for (the caller's own words, nothing about what is stored)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no node named {name!r}")
        self.name = name


def not_found(name: str) -> NodeNotFound:
    """One message for a node that is missing and one that is invisible: they must look the same."""
    return NodeNotFound(name)


def write_nodes(gc: GraphConn, analyzer: Analyzer, record: SessionRecord, drafts: Sequence[NodeDraft],
                now: datetime, merge: bool) -> tuple[list[tuple[Node, bool]], AuditDraft]:
    """Create (or, with ``merge``, update) the own agent's nodes at the live taint.

    Without ``merge`` a name the session already sees is left as it is (the
    MCP memory server's create_entities). With ``merge`` a version at the
    taint is updated in place (fields left empty keep their value) and a
    visible lower version gets a new version at the taint that starts from it.
    """
    scope, now_us, level, agent = Scope(record), to_us(now), int(record.taint), record.agent_id
    out: list[tuple[Node, bool]] = []
    for draft in drafts:
        row = visible_version(gc, scope, agent, draft.name)
        if row is not None and not merge:
            out.append((_node(row), False))
            continue
        if row is not None:
            draft = NodeDraft(draft.name, draft.type or row[3], draft.content or row[4],
                              draft.tags or tuple(json.loads(row[5])), draft.observations, draft.source or row[7])
            if row[6] == level:
                _update_node(gc, analyzer, row, draft, now_us)
            else:
                _insert_node(gc, analyzer, agent, level, draft, record.id, now_us)
        else:
            draft = NodeDraft(draft.name, draft.type or DEFAULT_TYPE, draft.content, draft.tags, draft.observations,
                              draft.source)
            unit = _insert_node(gc, analyzer, agent, level, draft, record.id, now_us)
            added, older = _add_observations(gc, analyzer, scope, agent, level, draft.name, draft.observations,
                                             record.id, now_us)
            if not older:  # nothing else attached to the name: the stored node is exactly the draft
                moment = from_us(now_us)
                out.append((Node(unit, agent, draft.name, draft.type, draft.content, draft.tags, record.taint,
                                 draft.source, record.id, moment, moment,
                                 tuple(Observation(t, record.taint, moment) for t in added)), True))
                continue
        if row is not None:
            _add_observations(gc, analyzer, scope, agent, level, draft.name, draft.observations, record.id, now_us)
        out.append((load_nodes(gc, scope, [(agent, draft.name)])[(agent, draft.name)], True))
    written = [n for n, created in out if created]
    return out, AuditDraft("graph.write", record.id, agent, record.taint, tuple(n.name for n in written),
                           tuple(n.level for n in written), tuple(n.id for n in written),
                           detail={"nodes": len(written), "skipped": len(out) - len(written)})


def add_observations(gc: GraphConn, analyzer: Analyzer, record: SessionRecord,
                     items: Sequence[tuple[str, tuple[str, ...]]], now: datetime
                     ) -> tuple[list[tuple[str, list[str]]], AuditDraft]:
    """Observations on the own agent's visible nodes; a name the session cannot see is NOT_FOUND."""
    scope, now_us = Scope(record), to_us(now)
    out = []
    for name, texts in items:
        if visible_version(gc, scope, record.agent_id, name) is None:
            raise not_found(name)
        out.append((name, _add_observations(gc, analyzer, scope, record.agent_id, int(record.taint), name, texts,
                                            record.id, now_us)[0]))
    return out, AuditDraft("graph.observe", record.id, record.agent_id, record.taint, tuple(n for n, _ in out),
                           (record.taint,), detail={"added": sum(len(a) for _, a in out)})


def relate(gc: GraphConn, record: SessionRecord, drafts: Sequence[EdgeDraft], now: datetime
           ) -> tuple[list[tuple[Edge, bool]], AuditDraft]:
    """Typed, directed edges between the own agent's visible nodes, at the live taint.

    An edge the session already sees (same from, to and relation) is not
    duplicated; at the session's own level a new note replaces the old one.
    Self-loops are allowed.
    """
    scope, now_us, level, agent = Scope(record), to_us(now), int(record.taint), record.agent_id
    out: list[tuple[Edge, bool]] = []
    for draft in drafts:
        for name in (draft.source, draft.target):
            if visible_version(gc, scope, agent, name) is None:
                raise not_found(name)
        params = {**scope.params, "ag": agent, "s": draft.source, "t": draft.target, "r": draft.relation}
        row = gc.one(f"SELECT {EDGE_COLUMNS} FROM graph_edges e WHERE e.agent_id = :ag AND e.source = :s "
                     "AND e.target = :t AND e.relation = :r AND e.level <= :lvl AND e.deleted_us IS NULL "
                     "ORDER BY e.level DESC LIMIT 1", params)
        if row is not None:
            if row[6] == level and draft.note is not None and draft.note != row[5]:
                gc.run("UPDATE graph_edges SET note = :note, updated_us = :now WHERE id = :id",
                       {"note": draft.note, "now": now_us, "id": row[0]})
                row = (*row[:5], draft.note, *row[6:])
            out.append((_edge(row), False))
            continue
        unit = str(uuid.uuid4())
        gc.run("INSERT INTO graph_edges (id, agent_id, source, target, relation, level, note, session_id, created_us, "
               "updated_us) VALUES (:id, :ag, :s, :t, :r, :level, :note, :session, :now, :now)",
               {**params, "id": unit, "level": level, "note": draft.note, "session": record.id, "now": now_us})
        out.append((Edge(unit, agent, draft.source, draft.target, draft.relation, draft.note, record.taint,
                         from_us(now_us)), True))
    made = [e for e, created in out if created]
    return out, AuditDraft("graph.relate", record.id, agent, record.taint,
                           tuple(dict.fromkeys(n for e in made for n in (e.source, e.target))),
                           (record.taint,), tuple(e.id for e in made), detail={"edges": len(made)})


def _soft_delete(gc: GraphConn, table: str, ids: Sequence[str], now_us: int) -> None:
    """Hide rows (kept for audit until purge); nodes and observations leave the index and the statistics."""
    for chunk in _chunks(list(ids)):
        marks, params = _in("k", chunk)
        if table != "graph_edges":
            for agent, level, count, total in gc.rows(
                    f"SELECT agent_id, level, count(*), sum(length) FROM {table} WHERE id IN ({marks}) "
                    "AND deleted_us IS NULL GROUP BY agent_id, level", params):
                if table == "graph_nodes":
                    _stats_add(gc, agent, level, -count, -int(total))
                else:
                    _stats_add(gc, agent, level, obs_len=-int(total))
            gc.run(f"DELETE FROM graph_postings WHERE unit_id IN ({marks})", params)
        gc.run(f"UPDATE {table} SET deleted_us = :now WHERE id IN ({marks})", {**params, "now": now_us})


def delete_nodes(gc: GraphConn, record: SessionRecord, names: Sequence[str], now: datetime
                 ) -> tuple[list[str], AuditDraft]:
    """Soft-delete the own agent's versions at exactly the taint, with their observations and edges there."""
    now_us, params = to_us(now), {"ag": record.agent_id, "lvl": int(record.taint)}
    deleted: list[str] = []
    for name in names:
        row = gc.one("SELECT id FROM graph_nodes WHERE agent_id = :ag AND name = :name AND level = :lvl "
                     "AND deleted_us IS NULL", {**params, "name": name})
        if row is None:
            continue
        obs = [r[0] for r in gc.rows("SELECT id FROM graph_observations WHERE agent_id = :ag AND name = :name "
                                     "AND level = :lvl AND deleted_us IS NULL", {**params, "name": name})]
        edges = [r[0] for r in gc.rows("SELECT id FROM graph_edges WHERE agent_id = :ag AND level = :lvl "
                                       "AND deleted_us IS NULL AND (source = :name OR target = :name)",
                                       {**params, "name": name})]
        _soft_delete(gc, "graph_nodes", [row[0]], now_us)
        _soft_delete(gc, "graph_observations", obs, now_us)
        _soft_delete(gc, "graph_edges", edges, now_us)
        _refresh(gc, record.agent_id, name)
        deleted.append(name)
    return deleted, AuditDraft("graph.delete", record.id, record.agent_id, record.taint, tuple(deleted),
                               (record.taint,), detail={"nodes": len(deleted), "asked": len(names)})


def delete_observations(gc: GraphConn, record: SessionRecord, items: Sequence[tuple[str, tuple[str, ...]]],
                        now: datetime) -> tuple[int, AuditDraft]:
    now_us, count = to_us(now), 0
    for name, texts in items:
        if not texts:
            continue
        marks, params = _in("x", list(texts))
        ids = [r[0] for r in gc.rows(
            f"SELECT id FROM graph_observations WHERE agent_id = :ag AND name = :name AND level = :lvl "
            f"AND deleted_us IS NULL AND text IN ({marks})",
            {**params, "ag": record.agent_id, "name": name, "lvl": int(record.taint)})]
        _soft_delete(gc, "graph_observations", ids, now_us)
        count += len(ids)
    return count, AuditDraft("graph.unobserve", record.id, record.agent_id, record.taint,
                             tuple(n for n, _ in items), (record.taint,), detail={"observations": count})


def delete_edges(gc: GraphConn, record: SessionRecord, drafts: Sequence[EdgeDraft], now: datetime
                 ) -> tuple[int, AuditDraft]:
    now_us, ids = to_us(now), []
    for d in drafts:
        ids += [r[0] for r in gc.rows(
            "SELECT id FROM graph_edges WHERE agent_id = :ag AND source = :s AND target = :t AND relation = :r "
            "AND level = :lvl AND deleted_us IS NULL",
            {"ag": record.agent_id, "s": d.source, "t": d.target, "r": d.relation, "lvl": int(record.taint)})]
    _soft_delete(gc, "graph_edges", ids, now_us)
    return len(ids), AuditDraft("graph.unrelate", record.id, record.agent_id, record.taint,
                                tuple(dict.fromkeys(n for d in drafts for n in (d.source, d.target))),
                                (record.taint,), tuple(ids), detail={"edges": len(ids)})


# ---------------------------------------------------------------------------------- operator actions


def purge(gc: GraphConn, before_us: int, agent_id: str | None) -> int:
    """Erase soft-deleted graph rows older than ``before`` (their postings left at the delete)."""
    extra, params = ("AND agent_id = :ag", {"ag": agent_id}) if agent_id is not None else ("", {})
    count = 0
    for table in COPIED_TABLES:
        ids = [r[0] for r in gc.rows(f"SELECT id FROM {table} WHERE deleted_us IS NOT NULL AND deleted_us < :b "
                                     + extra, {**params, "b": before_us})]
        for chunk in _chunks(ids):
            marks, kparams = _in("k", chunk)
            gc.run(f"DELETE FROM graph_postings WHERE unit_id IN ({marks})", kparams)
            gc.run(f"DELETE FROM {table} WHERE id IN ({marks})", kparams)
        count += len(ids)
    return count


def import_graph(gc: GraphConn, analyzer: Analyzer, agent: str, level: Level,
                 entities: Sequence[tuple[int, NodeDraft]], relations: Sequence[tuple[int, EdgeDraft]],
                 now: datetime) -> tuple[tuple[int, int], AuditDraft]:
    """Operator import at a chosen agent and level; raises (so nothing stays) on a relation to an unknown node.

    An entity that already exists at exactly that level keeps its fields and
    gains the observations it lacks; relations are not duplicated.
    """
    record = SessionRecord("import", agent, level, (), level, now)
    scope, now_us = Scope(record), to_us(now)
    nodes = 0
    for _, draft in entities:
        row = gc.one("SELECT id FROM graph_nodes WHERE agent_id = :ag AND name = :name AND level = :lvl "
                     "AND deleted_us IS NULL", {"ag": agent, "name": draft.name, "lvl": int(level)})
        if row is None:
            _insert_node(gc, analyzer, agent, int(level), draft, None, now_us)
            nodes += 1
        _add_observations(gc, analyzer, scope, agent, int(level), draft.name, draft.observations, None, now_us)
    edges = 0
    for line, draft in relations:
        for name in (draft.source, draft.target):
            if visible_version(gc, scope, agent, name) is None:
                raise ValidationError(f"line {line}: relation names an unknown entity {name!r}")
        exists = gc.one("SELECT 1 FROM graph_edges WHERE agent_id = :ag AND source = :s AND target = :t "
                        "AND relation = :r AND level = :lvl AND deleted_us IS NULL",
                        {"ag": agent, "s": draft.source, "t": draft.target, "r": draft.relation, "lvl": int(level)})
        if exists is None:
            gc.run("INSERT INTO graph_edges (id, agent_id, source, target, relation, level, note, session_id, "
                   "created_us, updated_us) VALUES (:id, :ag, :s, :t, :r, :lvl, :note, NULL, :now, :now)",
                   {"id": str(uuid.uuid4()), "ag": agent, "s": draft.source, "t": draft.target,
                    "r": draft.relation, "lvl": int(level), "note": draft.note, "now": now_us})
            edges += 1
    return (nodes, edges), operator_draft("graph.import", agent_id=agent, levels=(level,),
                                      detail={"nodes": nodes, "edges": edges, "entities": len(entities),
                                              "relations": len(relations)})


def export_view(gc: GraphConn, agent: str, level: Level, now: datetime, render) -> tuple[list[str], AuditDraft]:
    """Operator export: every node and edge of ``agent`` a session at ``level`` sees, page by page."""
    scope = Scope(SessionRecord("export", agent, level, (), level, now))
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
    return render(nodes, edges), operator_draft("graph.export", agent_id=agent, levels=(level,),
                                            detail={"nodes": len(nodes), "edges": len(edges)})
