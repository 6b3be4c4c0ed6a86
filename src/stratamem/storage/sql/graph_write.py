"""The knowledge graph's writes, index upkeep and operator actions, written once for both backends.

Companion of ``graph_sql`` (connection, visible view, reads): every function runs inside a transaction the
backend opened and bound to the session, writes only the own agent's rows at exactly the live taint, and
keeps the postings, the per-partition counts (``graph_part_stats``) and the ``multi``/``anchored`` flags
that searches use in step with the rows.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...audit import AuditDraft, operator_draft
from ...errors import ValidationError
from ...graph.checks import DEFAULT_TYPE, MAX_OBSERVATIONS_PER_NODE
from ...graph.model import Edge, EdgeDraft, Node, NodeDraft
from ...labels import level_of, visible_sql, within_sql
from ...text import Analyzer
from ..records import SessionRecord, session_event
from .graph_read import (
    COPIED_TABLES,
    GraphConn,
    Scope,
    _chunks,
    _in,
    _node,
    load_nodes,
    not_found,
    visible_version,
)
from .rows import to_us

# ---------------------------------------------------------------------------------- index upkeep


INSERT_NODE = (
    "INSERT INTO graph_nodes (id, agent_id, name, level, type, content, tags, source, session_id, created_us, "
    "updated_us, length) VALUES (:id, :agent, :name, :level, :type, :content, :tags, :source, :session, "
    ":created, :now, :len)"
)
INSERT_OBSERVATION = (
    "INSERT INTO graph_observations (id, agent_id, name, level, text, session_id, created_us, pos, "
    "length) VALUES (:id, :agent, :name, :level, :text, :session, :now, :pos, :len)"
)
INSERT_EDGE = (
    "INSERT INTO graph_edges (id, agent_id, source, target, relation, level, note, session_id, created_us, "
    "updated_us) VALUES (:id, :ag, :s, :t, :r, :level, :note, :session, :now, :now)"
)
INSERT_POSTING = (
    "INSERT INTO graph_postings (term, unit_id, kind, agent_id, name, level, tf) "
    "VALUES (:term, :unit, :kind, :agent, :name, :level, :tf)"
)


def _postings(
    unit_id: str, kind: str, agent: str, name: str, level: int, terms: dict[str, int]
) -> list[dict[str, Any]]:
    return [
        {"term": t, "unit": unit_id, "kind": kind, "agent": agent, "name": name, "level": level, "tf": tf}
        for t, tf in terms.items()
    ]


def _index(
    gc: GraphConn, unit_id: str, kind: str, agent: str, name: str, level: int, terms: dict[str, int]
) -> None:
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
    "AND x.name = {name} AND "
    + within_sql("x.level", "graph_observations.level")
    + " AND x.deleted_us IS NULL) "
    "THEN 1 ELSE 0 END "
    "WHERE agent_id = {ag} AND name = {name} AND deleted_us IS NULL",
)


def _refresh(gc: GraphConn, agent: str, name: str) -> None:
    if gc.dialect.row_security:
        gc.run("SELECT sm_graph_refresh(:ag, :name)", {"ag": agent, "name": name})
        return
    for statement in REFRESH_SQL:
        gc.run(statement.format(ag=":ag", name=":name"), {"ag": agent, "name": name})


def _stats_add(
    gc: GraphConn, agent: str, level: int, nodes: int = 0, node_len: int = 0, obs_len: int = 0
) -> None:
    """Per (agent, level) counts a writer keeps for its own partition (the level it writes at)."""
    gc.run(
        "INSERT INTO graph_part_stats (agent_id, level, nodes, node_len, obs_len) "
        "VALUES (:ag, :lvl, :n, :nl, :ol) ON CONFLICT (agent_id, level) DO UPDATE SET "
        "nodes = graph_part_stats.nodes + excluded.nodes, node_len = graph_part_stats.node_len + excluded.node_len, "
        "obs_len = graph_part_stats.obs_len + excluded.obs_len",
        {"ag": agent, "lvl": level, "n": nodes, "nl": node_len, "ol": obs_len},
    )


def _node_terms(
    analyzer: Analyzer, name: str, type_: str, content: str, tags: Sequence[str]
) -> tuple[Counter[str], int]:
    return analyzer.document_terms(name, f"{type_} {content}", tags)


def reindex(gc: GraphConn, analyzer: Analyzer) -> None:
    """Rebuild postings and lengths from the live rows (after a restore or a change of languages)."""
    gc.run("DELETE FROM graph_postings")
    for unit, agent, name, level, type_, content, tags in gc.rows(
        "SELECT id, agent_id, name, level, type, content, tags FROM graph_nodes WHERE deleted_us IS NULL"
    ):
        terms, length = _node_terms(analyzer, name, type_, content, json.loads(tags))
        gc.run("UPDATE graph_nodes SET length = :len WHERE id = :id", {"len": length, "id": unit})
        _index(gc, unit, "n", agent, name, level, terms)
    for unit, agent, name, level, text in gc.rows(
        "SELECT id, agent_id, name, level, text FROM graph_observations WHERE deleted_us IS NULL"
    ):
        terms, length = analyzer.document_terms("", text, ())
        gc.run("UPDATE graph_observations SET length = :len WHERE id = :id", {"len": length, "id": unit})
        _index(gc, unit, "o", agent, name, level, terms)
    gc.run("DELETE FROM graph_part_stats")
    gc.run(
        "INSERT INTO graph_part_stats (agent_id, level, nodes, node_len, obs_len) "
        "SELECT agent_id, level, count(*), sum(length), 0 FROM graph_nodes WHERE deleted_us IS NULL "
        "GROUP BY agent_id, level"
    )
    for agent, level, total in gc.rows(
        "SELECT agent_id, level, sum(length) FROM graph_observations "
        "WHERE deleted_us IS NULL GROUP BY agent_id, level"
    ):
        _stats_add(gc, agent, level, obs_len=int(total))
    for statement in REFRESH_SQL:
        gc.run(
            statement.format(ag="graph_nodes.agent_id", name="graph_nodes.name").replace(
                "WHERE agent_id = graph_nodes.agent_id AND name = graph_nodes.name AND", "WHERE"
            )
            if statement.startswith("UPDATE graph_nodes")
            else statement.format(ag="graph_observations.agent_id", name="graph_observations.name").replace(
                "WHERE agent_id = graph_observations.agent_id AND name = graph_observations.name AND", "WHERE"
            )
        )


# ---------------------------------------------------------------------------------- writes


def _insert_node(
    gc: GraphConn,
    analyzer: Analyzer,
    agent: str,
    level: int,
    draft: NodeDraft,
    session_id: str | None,
    now_us: int,
    created_us: int | None = None,
) -> str:
    unit = str(uuid.uuid4())
    terms, length = _node_terms(analyzer, draft.name, draft.type, draft.content, draft.tags)
    gc.run(
        INSERT_NODE,
        {
            "id": unit,
            "agent": agent,
            "name": draft.name,
            "level": level,
            "type": draft.type,
            "content": draft.content,
            "tags": json.dumps(list(draft.tags)),
            "source": draft.source,
            "session": session_id,
            "created": created_us or now_us,
            "now": now_us,
            "len": length,
        },
    )
    _index(gc, unit, "n", agent, draft.name, level, terms)
    _stats_add(gc, agent, level, 1, length)
    _refresh(gc, agent, draft.name)
    return unit


def _update_node(
    gc: GraphConn, analyzer: Analyzer, row: Sequence[Any], draft: NodeDraft, now_us: int
) -> None:
    terms, length = _node_terms(analyzer, draft.name, draft.type, draft.content, draft.tags)
    _stats_add(gc, row[1], row[6], 0, length - row[11])
    gc.run("DELETE FROM graph_postings WHERE unit_id = :id", {"id": row[0]})
    gc.run(
        "UPDATE graph_nodes SET type = :type, content = :content, tags = :tags, source = :source, "
        "updated_us = :now, length = :len WHERE id = :id",
        {
            "type": draft.type,
            "content": draft.content,
            "tags": json.dumps(list(draft.tags)),
            "source": draft.source,
            "now": now_us,
            "len": length,
            "id": row[0],
        },
    )
    _index(gc, row[0], "n", row[1], row[2], row[6], terms)


def _add_observations(
    gc: GraphConn,
    analyzer: Analyzer,
    scope: Scope,
    agent: str,
    level: int,
    name: str,
    texts: Sequence[str],
    session_id: str | None,
    now_us: int,
) -> tuple[list[str], int]:
    """Store the texts not already visible on (agent, name); returns those added, in order, and how many were there."""
    existing = {
        t
        for (t,) in gc.rows(
            "SELECT o.text FROM graph_observations o WHERE o.agent_id = :ag "
            f"AND o.name = :name AND {visible_sql('o.level')} AND o.deleted_us IS NULL",
            {**scope.params, "ag": agent, "name": name},
        )
    }
    added = [t for t in dict.fromkeys(texts) if t not in existing]
    if len(existing) + len(added) > MAX_OBSERVATIONS_PER_NODE:
        raise ValidationError(f"node {name!r} would hold more than {MAX_OBSERVATIONS_PER_NODE} observations")
    rows: list[dict[str, Any]] = []
    postings = []
    for pos, text in enumerate(added):
        unit = str(uuid.uuid4())
        terms, length = analyzer.document_terms("", text, ())
        rows.append(
            {
                "id": unit,
                "agent": agent,
                "name": name,
                "level": level,
                "text": text,
                "session": session_id,
                "now": now_us,
                "pos": pos,
                "len": length,
            }
        )
        postings += _postings(unit, "o", agent, name, level, terms)
    gc.many(INSERT_OBSERVATION, rows)
    gc.many(INSERT_POSTING, postings)
    if rows:
        _stats_add(gc, agent, level, obs_len=sum(r["len"] for r in rows))
    return added, len(existing)


def write_one_node(
    gc: GraphConn,
    analyzer: Analyzer,
    scope: Scope,
    record: SessionRecord,
    draft: NodeDraft,
    now_us: int,
    merge: bool,
) -> tuple[Node, bool]:
    """One node, row by row (``graph_batch.write_nodes`` sends here what it cannot insert as a set).

    Without ``merge`` a name the session already sees is left as it is. With ``merge`` a version at the
    taint is updated in place (fields left empty keep their value) and a visible lower version gets a new
    version at the taint that starts from it.
    """
    level, agent = record.taint_code, record.agent_id
    row = visible_version(gc, scope, agent, draft.name)
    if row is not None and not merge:
        return _node(row), False
    if row is not None:
        draft = NodeDraft(
            draft.name,
            draft.type or row[3],
            draft.content or row[4],
            draft.tags or tuple(json.loads(row[5])),
            draft.observations,
            draft.source or row[7],
        )
        if row[6] == level:
            _update_node(gc, analyzer, row, draft, now_us)
        else:
            _insert_node(gc, analyzer, agent, level, draft, record.id, now_us)
    else:
        draft = NodeDraft(
            draft.name,
            draft.type or DEFAULT_TYPE,
            draft.content,
            draft.tags,
            draft.observations,
            draft.source,
        )
        _insert_node(gc, analyzer, agent, level, draft, record.id, now_us)
    _add_observations(gc, analyzer, scope, agent, level, draft.name, draft.observations, record.id, now_us)
    return load_nodes(gc, scope, [(agent, draft.name)])[(agent, draft.name)], True


def write_draft(record: SessionRecord, out: Sequence[tuple[Node, bool]]) -> AuditDraft:
    """The audit event of a node write: names, levels and ids of the nodes written (never content)."""
    written = [n for n, created in out if created]
    detail = {"nodes": len(written), "skipped": len(out) - len(written)}
    return session_event("graph.write", record, ((n.name, n.level, n.id) for n in written), detail)


def add_observations(
    gc: GraphConn,
    analyzer: Analyzer,
    record: SessionRecord,
    items: Sequence[tuple[str, tuple[str, ...]]],
    now: datetime,
) -> tuple[list[tuple[str, list[str]]], AuditDraft]:
    """Observations on the own agent's visible nodes; a name the session cannot see is NOT_FOUND."""
    scope, now_us = Scope(record), to_us(now)
    out = []
    for name, texts in items:
        if visible_version(gc, scope, record.agent_id, name) is None:
            raise not_found(name)
        out.append(
            (
                name,
                _add_observations(
                    gc, analyzer, scope, record.agent_id, record.taint_code, name, texts, record.id, now_us
                )[0],
            )
        )
    return out, AuditDraft(
        "graph.observe",
        record.id,
        record.agent_id,
        record.taint_code,
        tuple(n for n, _ in out),
        (record.taint,),
        detail={"added": sum(len(a) for _, a in out)},
    )


def relate_draft(record: SessionRecord, made: Sequence[Edge]) -> AuditDraft:
    """The audit event of an edge write: the names it links and the new edges' ids (never notes)."""
    return AuditDraft(
        "graph.relate",
        record.id,
        record.agent_id,
        record.taint_code,
        tuple(dict.fromkeys(n for e in made for n in (e.source, e.target))),
        (record.taint,),
        tuple(e.id for e in made),
        detail={"edges": len(made)},
    )


def _soft_delete(gc: GraphConn, table: str, ids: Sequence[str], now_us: int) -> None:
    """Hide rows (kept for audit until purge); nodes and observations leave the index and the statistics."""
    for chunk in _chunks(list(ids)):
        marks, params = _in("k", chunk)
        if table != "graph_edges":
            for agent, level, count, total in gc.rows(
                f"SELECT agent_id, level, count(*), sum(length) FROM {table} WHERE id IN ({marks}) "
                "AND deleted_us IS NULL GROUP BY agent_id, level",
                params,
            ):
                if table == "graph_nodes":
                    _stats_add(gc, agent, level, -count, -int(total))
                else:
                    _stats_add(gc, agent, level, obs_len=-int(total))
            gc.run(f"DELETE FROM graph_postings WHERE unit_id IN ({marks})", params)
        gc.run(f"UPDATE {table} SET deleted_us = :now WHERE id IN ({marks})", {**params, "now": now_us})


def delete_nodes(
    gc: GraphConn, record: SessionRecord, names: Sequence[str], now: datetime
) -> tuple[list[str], AuditDraft]:
    """Soft-delete the own agent's versions at exactly the taint, with their observations and edges there."""
    now_us, params = to_us(now), {"ag": record.agent_id, "code": record.taint_code}
    deleted: list[str] = []
    for name in names:
        row = gc.one(
            "SELECT id FROM graph_nodes WHERE agent_id = :ag AND name = :name AND level = :code "
            "AND deleted_us IS NULL",
            {**params, "name": name},
        )
        if row is None:
            continue
        obs = [
            r[0]
            for r in gc.rows(
                "SELECT id FROM graph_observations WHERE agent_id = :ag AND name = :name "
                "AND level = :code AND deleted_us IS NULL",
                {**params, "name": name},
            )
        ]
        edges = [
            r[0]
            for r in gc.rows(
                "SELECT id FROM graph_edges WHERE agent_id = :ag AND level = :code "
                "AND deleted_us IS NULL AND (source = :name OR target = :name)",
                {**params, "name": name},
            )
        ]
        _soft_delete(gc, "graph_nodes", [row[0]], now_us)
        _soft_delete(gc, "graph_observations", obs, now_us)
        _soft_delete(gc, "graph_edges", edges, now_us)
        _refresh(gc, record.agent_id, name)
        deleted.append(name)
    return deleted, AuditDraft(
        "graph.delete",
        record.id,
        record.agent_id,
        record.taint_code,
        tuple(deleted),
        (record.taint,),
        detail={"nodes": len(deleted), "asked": len(names)},
    )


def delete_observations(
    gc: GraphConn, record: SessionRecord, items: Sequence[tuple[str, tuple[str, ...]]], now: datetime
) -> tuple[int, AuditDraft]:
    now_us, count = to_us(now), 0
    for name, texts in items:
        if not texts:
            continue
        marks, params = _in("x", list(texts))
        ids = [
            r[0]
            for r in gc.rows(
                f"SELECT id FROM graph_observations WHERE agent_id = :ag AND name = :name AND level = :code "
                f"AND deleted_us IS NULL AND text IN ({marks})",
                {**params, "ag": record.agent_id, "name": name, "code": record.taint_code},
            )
        ]
        _soft_delete(gc, "graph_observations", ids, now_us)
        count += len(ids)
    return count, AuditDraft(
        "graph.unobserve",
        record.id,
        record.agent_id,
        record.taint_code,
        tuple(n for n, _ in items),
        (record.taint,),
        detail={"observations": count},
    )


def delete_edges(
    gc: GraphConn, record: SessionRecord, drafts: Sequence[EdgeDraft], now: datetime
) -> tuple[int, AuditDraft]:
    now_us, ids = to_us(now), []
    for d in drafts:
        ids += [
            r[0]
            for r in gc.rows(
                "SELECT id FROM graph_edges WHERE agent_id = :ag AND source = :s AND target = :t AND relation = :r "
                "AND level = :code AND deleted_us IS NULL",
                {
                    "ag": record.agent_id,
                    "s": d.source,
                    "t": d.target,
                    "r": d.relation,
                    "code": record.taint_code,
                },
            )
        ]
    _soft_delete(gc, "graph_edges", ids, now_us)
    return len(ids), AuditDraft(
        "graph.unrelate",
        record.id,
        record.agent_id,
        record.taint_code,
        tuple(dict.fromkeys(n for d in drafts for n in (d.source, d.target))),
        (record.taint,),
        tuple(ids),
        detail={"edges": len(ids)},
    )


# ---------------------------------------------------------------------------------- operator actions


def purge(gc: GraphConn, before_us: int, agent_id: str | None) -> int:
    """Erase soft-deleted graph rows older than ``before`` (their postings left at the delete)."""
    extra, params = ("AND agent_id = :ag", {"ag": agent_id}) if agent_id is not None else ("", {})
    count = 0
    for table in COPIED_TABLES:
        ids = [
            r[0]
            for r in gc.rows(
                f"SELECT id FROM {table} WHERE deleted_us IS NOT NULL AND deleted_us < :b " + extra,
                {**params, "b": before_us},
            )
        ]
        for chunk in _chunks(ids):
            marks, kparams = _in("k", chunk)
            gc.run(f"DELETE FROM graph_postings WHERE unit_id IN ({marks})", kparams)
            gc.run(f"DELETE FROM {table} WHERE id IN ({marks})", kparams)
        count += len(ids)
    return count


def import_graph(
    gc: GraphConn,
    analyzer: Analyzer,
    agent: str,
    label: int,
    entities: Sequence[tuple[int, NodeDraft]],
    relations: Sequence[tuple[int, EdgeDraft]],
    now: datetime,
) -> tuple[tuple[int, int], AuditDraft]:
    """Operator import at a chosen agent and label (a stored label: ``stratamem.labels``); raises (so nothing stays) on a relation to an unknown node.

    An entity that already exists at exactly that level keeps its fields and
    gains the observations it lacks; relations are not duplicated.
    """
    level = level_of(label)
    record = SessionRecord("import", agent, level, (), level, now, clearance_code=label, taint_code=label)
    scope, now_us = Scope(record), to_us(now)
    nodes = 0
    for _, draft in entities:
        row = gc.one(
            "SELECT id FROM graph_nodes WHERE agent_id = :ag AND name = :name AND level = :lvl "
            "AND deleted_us IS NULL",
            {"ag": agent, "name": draft.name, "lvl": label},
        )
        if row is None:
            _insert_node(gc, analyzer, agent, label, draft, None, now_us)
            nodes += 1
        _add_observations(gc, analyzer, scope, agent, label, draft.name, draft.observations, None, now_us)
    edges = 0
    for line, relation in relations:
        for name in (relation.source, relation.target):
            if visible_version(gc, scope, agent, name) is None:
                raise ValidationError(f"line {line}: relation names an unknown entity {name!r}")
        exists = gc.one(
            "SELECT 1 FROM graph_edges WHERE agent_id = :ag AND source = :s AND target = :t "
            "AND relation = :r AND level = :lvl AND deleted_us IS NULL",
            {
                "ag": agent,
                "s": relation.source,
                "t": relation.target,
                "r": relation.relation,
                "lvl": label,
            },
        )
        if exists is None:
            gc.run(
                INSERT_EDGE,
                {
                    "id": str(uuid.uuid4()),
                    "ag": agent,
                    "s": relation.source,
                    "t": relation.target,
                    "r": relation.relation,
                    "level": label,
                    "note": relation.note,
                    "session": None,
                    "now": now_us,
                },
            )
            edges += 1
    return (nodes, edges), operator_draft(
        "graph.import",
        agent_id=agent,
        levels=(level,),
        detail={"nodes": nodes, "edges": edges, "entities": len(entities), "relations": len(relations)},
    )
