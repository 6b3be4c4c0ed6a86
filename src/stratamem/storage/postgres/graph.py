"""The knowledge graph on PostgreSQL: migration 5 (tables, row-level security) and its transactions.

The tables mirror ``sqlite_graph`` column for column (so ``dump``/``restore``
move a graph between backends unchanged). Row-level security is the memories':
the application role reads rows of the bound session's agents at levels <=
its taint, and inserts or updates rows of its own agent at exactly the taint;
only operator transactions delete (purge). Postings may be deleted by their
writer, as memory postings are. Nothing in the graph needs a derived flag on
another level's rows (visibility is computed at query time), so no
SECURITY DEFINER function is involved.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol import GraphBody
from ..sql.graph_read import GraphConn
from ..sql.graph_write import REFRESH_SQL

if TYPE_CHECKING:
    from .backend import PostgresBackend

T = TypeVar("T")

_OPERATOR = "(SELECT sm_operator())"
_READ = f"({_OPERATOR} OR (level <= (SELECT sm_taint()) AND agent_id = ANY (CAST((SELECT sm_agents()) AS text[]))))"
_WRITE = f"({_OPERATOR} OR (level = (SELECT sm_taint()) AND agent_id = (SELECT sm_agent())))"
_C = 'text COLLATE "C"'


def _refresh_body() -> str:
    guard = " AND (sm_operator() OR p_agent = sm_agent())"
    return ";\n         ".join(stmt.format(ag="p_agent", name="p_name") + guard for stmt in REFRESH_SQL)


V5 = [
    f"""CREATE TABLE graph_nodes (
        id {_C} PRIMARY KEY, agent_id {_C} NOT NULL, name {_C} NOT NULL, level smallint NOT NULL,
        type {_C} NOT NULL, content text NOT NULL, tags text NOT NULL, source text, session_id text,
        created_us bigint NOT NULL, updated_us bigint NOT NULL, deleted_us bigint,
        length integer NOT NULL DEFAULT 0, multi smallint NOT NULL DEFAULT 0)""",
    "CREATE INDEX graph_nodes_multi ON graph_nodes (agent_id) WHERE multi = 1 AND deleted_us IS NULL",
    "CREATE UNIQUE INDEX graph_nodes_live ON graph_nodes (agent_id, name, level) WHERE deleted_us IS NULL",
    "CREATE INDEX graph_nodes_deleted ON graph_nodes (deleted_us) WHERE deleted_us IS NOT NULL",
    f"""CREATE TABLE graph_observations (
        id {_C} PRIMARY KEY, agent_id {_C} NOT NULL, name {_C} NOT NULL, level smallint NOT NULL,
        text {_C} NOT NULL, session_id text, created_us bigint NOT NULL, pos integer NOT NULL,
        deleted_us bigint, length integer NOT NULL DEFAULT 0, anchored smallint NOT NULL DEFAULT 1)""",
    "CREATE INDEX graph_observations_orphans ON graph_observations (agent_id) WHERE anchored = 0 AND deleted_us IS NULL",
    "CREATE INDEX graph_observations_name ON graph_observations (agent_id, name, level)",
    "CREATE INDEX graph_observations_deleted ON graph_observations (deleted_us) WHERE deleted_us IS NOT NULL",
    f"""CREATE TABLE graph_edges (
        id {_C} PRIMARY KEY, agent_id {_C} NOT NULL, source {_C} NOT NULL, target {_C} NOT NULL,
        relation {_C} NOT NULL, level smallint NOT NULL, note text, session_id text,
        created_us bigint NOT NULL, updated_us bigint NOT NULL, deleted_us bigint)""",
    "CREATE INDEX graph_edges_source ON graph_edges (agent_id, source, level)",
    "CREATE INDEX graph_edges_target ON graph_edges (agent_id, target, level)",
    "CREATE INDEX graph_edges_deleted ON graph_edges (deleted_us) WHERE deleted_us IS NOT NULL",
    f"""CREATE TABLE graph_postings (
        term {_C} NOT NULL, unit_id {_C} NOT NULL, kind {_C} NOT NULL, agent_id {_C} NOT NULL,
        name {_C} NOT NULL, level smallint NOT NULL, tf integer NOT NULL, PRIMARY KEY (term, unit_id))""",
    "CREATE INDEX graph_postings_unit ON graph_postings (unit_id)",
    f"""CREATE TABLE graph_part_stats (
        agent_id {_C} NOT NULL, level smallint NOT NULL, nodes bigint NOT NULL, node_len bigint NOT NULL,
        obs_len bigint NOT NULL, PRIMARY KEY (agent_id, level))""",
    # Flags on other levels' rows (see graph_write.REFRESH_SQL), for the bound agent's names only.
    f"""CREATE FUNCTION sm_graph_refresh(p_agent text, p_name text) RETURNS void
       LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
         {_refresh_body()}
       $$""",
    *(
        stmt
        for table in ("graph_nodes", "graph_observations", "graph_edges")
        for stmt in (
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"CREATE POLICY {table}_read ON {table} FOR SELECT USING {_READ}",
            f"CREATE POLICY {table}_insert ON {table} FOR INSERT WITH CHECK {_WRITE}",
            f"CREATE POLICY {table}_update ON {table} FOR UPDATE USING {_WRITE} WITH CHECK {_WRITE}",
            f"CREATE POLICY {table}_delete ON {table} FOR DELETE USING ({_OPERATOR})",
        )
    ),
    "ALTER TABLE graph_part_stats ENABLE ROW LEVEL SECURITY",
    f"CREATE POLICY graph_part_stats_read ON graph_part_stats FOR SELECT USING {_READ}",
    f"CREATE POLICY graph_part_stats_insert ON graph_part_stats FOR INSERT WITH CHECK {_WRITE}",
    f"CREATE POLICY graph_part_stats_update ON graph_part_stats FOR UPDATE USING {_WRITE} WITH CHECK {_WRITE}",
    f"CREATE POLICY graph_part_stats_delete ON graph_part_stats FOR DELETE USING ({_OPERATOR})",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON graph_part_stats TO {app}",
    "GRANT EXECUTE ON FUNCTION sm_graph_refresh(text, text) TO {app}",
    "ALTER TABLE graph_postings ENABLE ROW LEVEL SECURITY",
    f"CREATE POLICY graph_postings_read ON graph_postings FOR SELECT USING {_READ}",
    f"CREATE POLICY graph_postings_insert ON graph_postings FOR INSERT WITH CHECK {_WRITE}",
    f"CREATE POLICY graph_postings_delete ON graph_postings FOR DELETE USING {_WRITE}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON graph_nodes, graph_observations, graph_edges TO {app}",
    "GRANT SELECT, INSERT, DELETE ON graph_postings TO {app}",
    """DO $$ BEGIN
         EXECUTE format('GRANT MAINTAIN ON graph_nodes, graph_observations, graph_edges, graph_postings, graph_part_stats TO %I',
                        {app_literal});
       EXCEPTION WHEN syntax_error OR feature_not_supported OR invalid_parameter_value THEN NULL;
       END $$""",
]

VACUUM_TABLES = "graph_nodes, graph_observations, graph_edges, graph_postings, graph_part_stats"
GRAPH_LOCK = "\x1egraph"  # the advisory key serialising one agent's graph writes


def write(backend: PostgresBackend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    def tx(conn: Any) -> T:
        record = backend._bound_session(conn, session_id, "FOR SHARE")
        backend._lock_keys(conn, [(record.agent_id, GRAPH_LOCK)])
        result, draft = body(GraphConn(conn, postgres=True), record)
        backend._append(conn, draft, now)
        return result

    return backend._write(tx)


def read(backend: PostgresBackend, session_id: str, now: datetime, body: GraphBody[T]) -> T:
    def tx(conn: Any) -> T:
        record = backend._bound_session(conn, session_id)
        result, draft = body(GraphConn(conn, postgres=True), record)
        backend._append(conn, draft, now)
        return result

    return backend._write(tx)


def operator(backend: PostgresBackend, now: datetime, body: Callable[[GraphConn], tuple[T, Any]]) -> T:
    def tx(conn: Any) -> T:
        backend._lock_store(conn)
        result, draft = body(GraphConn(conn, postgres=True))
        backend._append(conn, draft, now)
        return result

    return backend._operator(tx)
