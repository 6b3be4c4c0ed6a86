"""Set-based graph writes: a batch of nodes or edges in a handful of statements, not a handful per row.

``create_entities``/``create_relations`` (and ``capture``/``relate``) land here. A batch is read with one
query per few hundred names (which names the session sees, which observations and edges already exist),
then written with one ``executemany`` per table, so a call costs about the same number of round trips for
one entity as for a thousand. The rules are exactly those of the row-by-row path in ``graph_write`` (which
still handles the rare cases: merging into a node the session already sees, a name repeated in one call):
writes go to the own agent at the live taint; an existing visible edge is not duplicated; a name the
session cannot see is NOT_FOUND whether it is missing or above the session.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...audit import AuditDraft
from ...errors import ValidationError
from ...graph.checks import DEFAULT_TYPE, MAX_OBSERVATIONS_PER_NODE
from ...graph.model import Edge, EdgeDraft, Node, NodeDraft, Observation
from ...labels import visible_sql
from ...text import Analyzer
from ..records import SessionRecord
from . import graph_write as w
from .graph_read import (
    EDGE_COLUMNS,
    NODE_COLUMNS,
    GraphConn,
    Scope,
    _chunks,
    _edge,
    _in,
    load_nodes,
    not_found,
)
from .rows import from_us, to_us

EDGE_CHUNK = 300  # (from, to, relation) triples per lookup: 900 parameters, under every backend's limit


def visible_rows(gc: GraphConn, scope: Scope, agent: str, names: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """The version of each name the session sees among the own agent's rows (highest level <= taint)."""
    found: dict[str, tuple[Any, ...]] = {}
    for chunk in _chunks(list(dict.fromkeys(names))):
        marks, params = _in("k", chunk)
        for row in gc.rows(
            f"SELECT {NODE_COLUMNS} FROM graph_nodes n WHERE n.agent_id = :ag AND n.name IN ({marks}) "
            f"AND {visible_sql('n.level')} AND n.deleted_us IS NULL",
            {**scope.params, **params, "ag": agent},
        ):
            if row[2] not in found or row[6] > found[row[2]][6]:
                found[row[2]] = row
    return found


def _known_observations(gc: GraphConn, scope: Scope, agent: str, names: Sequence[str]) -> dict[str, set[str]]:
    """Texts already on each name at levels <= taint (what ``_add_observations`` would not store again)."""
    known: dict[str, set[str]] = {}
    for chunk in _chunks(list(names)):
        marks, params = _in("k", chunk)
        for name, text in gc.rows(
            f"SELECT o.name, o.text FROM graph_observations o WHERE o.agent_id = :ag AND o.name IN ({marks}) "
            f"AND {visible_sql('o.level')} AND o.deleted_us IS NULL",
            {**scope.params, **params, "ag": agent},
        ):
            known.setdefault(name, set()).add(text)
    return known


def _needs_refresh(gc: GraphConn, agent: str, names: Sequence[str]) -> list[str]:
    """Names whose ``multi``/``anchored`` flags a new version may change: those with any other live row.

    On SQLite one query finds them (a brand-new name has nothing to flag). On PostgreSQL rows above the
    session are hidden from it by row-level security, so every name goes through ``sm_graph_refresh``.
    """
    if gc.dialect.row_security:
        return list(names)
    out: set[str] = set()
    for chunk in _chunks(list(names)):
        marks, params = _in("k", chunk)
        for table in ("graph_nodes", "graph_observations"):
            out.update(
                name
                for (name,) in gc.rows(
                    f"SELECT DISTINCT name FROM {table} WHERE agent_id = :ag AND name IN ({marks}) "
                    "AND deleted_us IS NULL",
                    {**params, "ag": agent},
                )
            )
    return [n for n in names if n in out]


def _insert_new(
    gc: GraphConn,
    analyzer: Analyzer,
    scope: Scope,
    record: SessionRecord,
    drafts: Sequence[NodeDraft],
    now_us: int,
) -> dict[str, Node]:
    """Insert nodes for names the session sees no version of, with their observations, set-based."""
    agent, level = record.agent_id, record.taint_code
    refresh = _needs_refresh(gc, agent, [d.name for d in drafts])
    known = _known_observations(gc, scope, agent, refresh) if refresh else {}
    moment = from_us(now_us)
    node_rows: list[dict[str, Any]] = []
    obs_rows: list[dict[str, Any]] = []
    postings: list[dict[str, Any]] = []
    made: dict[str, Node] = {}
    node_len = obs_len = 0
    for draft in drafts:
        existing = known.get(draft.name, set())
        added = [t for t in draft.observations if t not in existing]
        if len(existing) + len(added) > MAX_OBSERVATIONS_PER_NODE:
            raise ValidationError(
                f"node {draft.name!r} would hold more than {MAX_OBSERVATIONS_PER_NODE} observations"
            )
        unit = str(uuid.uuid4())
        type_ = draft.type or DEFAULT_TYPE
        terms, length = w._node_terms(analyzer, draft.name, type_, draft.content, draft.tags)
        node_len += length
        node_rows.append(
            {
                "id": unit,
                "agent": agent,
                "name": draft.name,
                "level": level,
                "type": type_,
                "content": draft.content,
                "tags": json.dumps(list(draft.tags)),
                "source": draft.source,
                "session": record.id,
                "created": now_us,
                "now": now_us,
                "len": length,
            }
        )
        postings += w._postings(unit, "n", agent, draft.name, level, terms)
        for pos, text in enumerate(added):
            obs_id = str(uuid.uuid4())
            obs_terms, obs_length = analyzer.document_terms("", text, ())
            obs_len += obs_length
            obs_rows.append(
                {
                    "id": obs_id,
                    "agent": agent,
                    "name": draft.name,
                    "level": level,
                    "text": text,
                    "session": record.id,
                    "now": now_us,
                    "pos": pos,
                    "len": obs_length,
                }
            )
            postings += w._postings(obs_id, "o", agent, draft.name, level, obs_terms)
        made[draft.name] = Node(
            unit,
            agent,
            draft.name,
            type_,
            draft.content,
            draft.tags,
            record.taint,
            draft.source,
            record.id,
            moment,
            moment,
            tuple(Observation(t, record.taint, moment) for t in added),
        )
    gc.many(w.INSERT_NODE, node_rows)
    gc.many(w.INSERT_OBSERVATION, obs_rows)
    gc.many(w.INSERT_POSTING, postings)
    w._stats_add(gc, agent, level, len(node_rows), node_len, obs_len)
    for name in refresh:
        w._refresh(gc, agent, name)
    if known:  # older observations (at other levels) belong to the node too: read it back whole
        loaded = load_nodes(gc, scope, [(agent, name) for name in known])
        made.update({name: node for (_, name), node in loaded.items()})
    return made


def write_nodes(
    gc: GraphConn,
    analyzer: Analyzer,
    record: SessionRecord,
    drafts: Sequence[NodeDraft],
    now: datetime,
    merge: bool,
) -> tuple[list[tuple[Node, bool]], AuditDraft]:
    """Create (or, with ``merge``, update) the own agent's nodes at the live taint.

    Without ``merge`` a name the session already sees is left as it is (the MCP memory server's
    create_entities). With ``merge`` a version at the taint is updated in place (fields left empty keep
    their value) and a visible lower version gets a new version at the taint that starts from it.
    Names the session does not see yet are inserted together; the others go row by row.
    """
    scope, now_us, agent = Scope(record), to_us(now), record.agent_id
    seen = visible_rows(gc, scope, agent, [d.name for d in drafts])
    first: dict[str, int] = {}
    for i, draft in enumerate(drafts):
        first.setdefault(draft.name, i)
    fresh = [d for i, d in enumerate(drafts) if d.name not in seen and first[d.name] == i]
    made = _insert_new(gc, analyzer, scope, record, fresh, now_us) if fresh else {}
    out: list[tuple[Node, bool]] = []
    for i, draft in enumerate(drafts):
        if draft.name in made and first[draft.name] == i:
            out.append((made[draft.name], True))
        else:
            out.append(w.write_one_node(gc, analyzer, scope, record, draft, now_us, merge))
    return out, w.write_draft(record, out)


def relate(
    gc: GraphConn, record: SessionRecord, drafts: Sequence[EdgeDraft], now: datetime
) -> tuple[list[tuple[Edge, bool]], AuditDraft]:
    """Typed, directed edges between the own agent's visible nodes, at the live taint.

    An edge the session already sees (same from, to and relation) is not duplicated; at the session's own
    level a new note replaces the old one. Self-loops are allowed. The first name (in call order, source
    before target) the session cannot see makes the whole call NOT_FOUND.
    """
    scope, now_us, level, agent = Scope(record), to_us(now), record.taint_code, record.agent_id
    visible = visible_rows(gc, scope, agent, [n for d in drafts for n in (d.source, d.target)])
    for draft in drafts:
        for name in (draft.source, draft.target):
            if name not in visible:
                raise not_found(name)
    current = _existing_edges(gc, scope, agent, drafts)
    inserts: dict[tuple[str, str, str], dict[str, Any]] = {}
    out: list[tuple[Edge, bool]] = []
    for draft in drafts:
        key = (draft.source, draft.target, draft.relation)
        if key in inserts:  # named twice in one call: the second is the existing edge
            row = inserts[key]
            if draft.note is not None:
                row["note"] = draft.note
            out.append((_new_edge(record, row), False))
        elif key in current:
            row_ = current[key]
            if row_[6] == level and draft.note is not None and draft.note != row_[5]:
                gc.run(
                    "UPDATE graph_edges SET note = :note, updated_us = :now WHERE id = :id",
                    {"note": draft.note, "now": now_us, "id": row_[0]},
                )
                row_ = current[key] = (*row_[:5], draft.note, *row_[6:])
            out.append((_edge(row_), False))
        else:
            inserts[key] = {
                "id": str(uuid.uuid4()),
                "ag": agent,
                "s": draft.source,
                "t": draft.target,
                "r": draft.relation,
                "level": level,
                "note": draft.note,
                "session": record.id,
                "now": now_us,
            }
            out.append((_new_edge(record, inserts[key]), True))
    gc.many(w.INSERT_EDGE, list(inserts.values()))
    return out, w.relate_draft(record, [e for e, created in out if created])


def _new_edge(record: SessionRecord, row: dict[str, Any]) -> Edge:
    return Edge(
        row["id"], row["ag"], row["s"], row["t"], row["r"], row["note"], record.taint, from_us(row["now"])
    )


def _existing_edges(
    gc: GraphConn, scope: Scope, agent: str, drafts: Sequence[EdgeDraft]
) -> dict[tuple[str, str, str], tuple[Any, ...]]:
    """For each (from, to, relation) asked, the highest live version at or below the taint, if any."""
    keys = list(dict.fromkeys((d.source, d.target, d.relation) for d in drafts))
    found: dict[tuple[str, str, str], tuple[Any, ...]] = {}
    for chunk in _chunks(keys, EDGE_CHUNK):
        params: dict[str, Any] = {**scope.params, "ag": agent}
        values = []
        for i, (s, t, r) in enumerate(chunk):
            params.update({f"s{i}": s, f"t{i}": t, f"r{i}": r})
            values.append(f"(:s{i}, :t{i}, :r{i})")
        for row in gc.rows(
            f"WITH want (s, t, r) AS (VALUES {', '.join(values)}) SELECT {EDGE_COLUMNS} FROM want "
            "JOIN graph_edges e ON e.agent_id = :ag AND e.source = want.s AND e.target = want.t "
            f"AND e.relation = want.r WHERE {visible_sql('e.level')} AND e.deleted_us IS NULL",
            params,
        ):
            key = (row[2], row[3], row[4])
            if key not in found or row[6] > found[key][6]:
                found[key] = row
    return found
