"""PostgreSQL schema version 14: labels and compartments (``stratamem.labels``), enforced by the database too.

Every level column holds a label's integer, ``level | compartment bits << 2`` (a level alone is its own
label, so no row changes), which needs 64 bits: those columns become ``bigint``, as do the sessions'
clearance and taint, the taint history and the audit events' taint. ``compartments`` is the store's
registry (each defined name's bit): any transaction may read it, only operator transactions add to it.
``sm_taint()`` returns the bound label's integer (``connect.bind`` and the save functions bind it).

Read policies test the label order, as ``labels.visible_sql`` does in the backend's own queries: the
label is within the taint's integer, holds no compartment bit outside the taint's, and its level is not
above the taint's. Write policies keep the exact label (``level = sm_taint()``), so a session holding
compartments cannot write at its level alone. The policies name ``sm_taint()`` and the columns whose type
changes, so every policy that compares labels is dropped first and made again. A session's taint may only
rise in the label order: the trigger now also refuses dropping a compartment.

Part of the migration list's text (``migrations.py``): once shipped, what ``statements`` returns never
changes. Every statement may run again (a store set back to an earlier version re-runs the later ones).
"""

from __future__ import annotations

from . import save

# labels.ALL_COMPARTMENT_BITS (bits 2..62), written out: shipped SQL does not follow a Python constant
_ALL_COMPARTMENT_BITS = 9223372036854775804

# Each table's policies that compare labels: their name suffix and kind.
_TABLES = {
    "memories": "read insert update",
    "postings": "read insert delete",
    "part_stats": "read insert update",
    "term_stats": "read insert update delete",
    "turn_messages": "own_read insert",
    "turn_usage": "own_read insert",
    "graph_nodes": "read insert update",
    "graph_observations": "read insert update",
    "graph_edges": "read insert update",
    "graph_part_stats": "read insert update",
    "graph_postings": "read insert delete",
    "memory_vectors": "read insert update",
    "audit": "audit_read audit_insert",
}
_COLUMNS = {
    **{table: ("level",) for table in _TABLES if table != "audit"},
    "audit": ("taint",),
    "sessions": ("clearance", "taint"),
    "taint_events": ("previous", "new"),
}


def reads(column: str) -> str:
    """SQL true iff the label in ``column`` is <= the bound taint (each setting read once per statement)."""
    return (
        f"({column} <= (SELECT sm_taint()) AND ({column} & (SELECT ~sm_taint() & {_ALL_COMPARTMENT_BITS})) = 0 "
        f"AND ({column} & 3) <= (SELECT sm_taint() & 3))"
    )


def statements(operator: str, write: str, audit_write: str) -> list[str]:
    """Version 14's statements, given the policy parts of version 1 (operator mode, the exact-label write
    rule of rows and of audit events)."""
    agents = "agent_id = ANY (CAST((SELECT sm_agents()) AS text[]))"
    kinds = {
        "read": ("read", "SELECT", f"({operator} OR ({reads('level')} AND {agents}))", None),
        "own_read": (
            "read",
            "SELECT",
            f"({operator} OR ({reads('level')} AND agent_id = (SELECT sm_agent())))",
            None,
        ),
        "audit_read": ("read", "SELECT", f"({operator} OR ({reads('taint')} AND {agents}))", None),
        "insert": ("insert", "INSERT", None, write),
        "audit_insert": ("insert", "INSERT", None, audit_write),
        "update": ("update", "UPDATE", write, write),
        "delete": ("delete", "DELETE", write, None),
    }
    policies = [(table, *kinds[kind]) for table, names in _TABLES.items() for kind in names.split()]
    return [
        *(f"DROP POLICY IF EXISTS {table}_{suffix} ON {table}" for table, suffix, *_ in policies),
        "DROP FUNCTION IF EXISTS sm_taint()",
        """CREATE FUNCTION sm_taint() RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE
       AS $$ SELECT nullif(current_setting('stratamem.taint', true), '')::bigint $$""",
        "GRANT EXECUTE ON FUNCTION sm_taint() TO {app}",
        *(
            f"ALTER TABLE {table} " + ", ".join(f"ALTER COLUMN {c} TYPE bigint" for c in columns)
            for table, columns in _COLUMNS.items()
        ),
        *(
            f"CREATE POLICY {table}_{suffix} ON {table} FOR {command}"
            + (f" USING {using}" if using else "")
            + (f" WITH CHECK {check}" if check else "")
            for table, suffix, command, using, check in policies
        ),
        f"""CREATE OR REPLACE FUNCTION sm_taint_never_lowers() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF ((NEW.taint & 3) < (OLD.taint & 3) OR (OLD.taint & ~NEW.taint & {_ALL_COMPARTMENT_BITS}) <> 0
             OR NEW.agent_id IS DISTINCT FROM OLD.agent_id) AND NOT sm_operator() THEN
           RAISE EXCEPTION 'stratamem: a session keeps its agent and its taint never goes down; open a new session'
             USING ERRCODE = '23514';
         END IF;
         RETURN NEW;
       END $$""",
        """CREATE TABLE IF NOT EXISTS compartments (
        name text COLLATE "C" PRIMARY KEY,
        bit integer NOT NULL UNIQUE)""",
        "ALTER TABLE compartments ENABLE ROW LEVEL SECURITY",
        "DROP POLICY IF EXISTS compartments_read ON compartments",
        "CREATE POLICY compartments_read ON compartments FOR SELECT USING (true)",
        "DROP POLICY IF EXISTS compartments_insert ON compartments",
        f"CREATE POLICY compartments_insert ON compartments FOR INSERT WITH CHECK ({operator})",
        "GRANT SELECT, INSERT ON compartments TO {app}",
        save.SM_SAVE,
        save.SM_SAVE_ONE,
    ]


# Version 16: the graph's anchored flag compares LABELS (an observation is anchored by a node whose label is
# within its own: level not above and no compartment outside), as ``graph_write.REFRESH_SQL`` does on SQLite;
# the integer order alone would count a PUBLIC+HR node as below a PUBLIC+FINANCE observation. Frozen text.
GRAPH_REFRESH = [
    """CREATE OR REPLACE FUNCTION sm_graph_refresh(p_agent text, p_name text) RETURNS void
       LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
         UPDATE graph_nodes SET multi = CASE WHEN (SELECT count(*) FROM graph_nodes h WHERE h.agent_id = p_agent AND h.name = p_name AND h.deleted_us IS NULL) > 1 THEN 1 ELSE 0 END WHERE agent_id = p_agent AND name = p_name AND deleted_us IS NULL AND (sm_operator() OR p_agent = sm_agent());
         UPDATE graph_observations SET anchored = CASE WHEN EXISTS (SELECT 1 FROM graph_nodes x WHERE x.agent_id = p_agent AND x.name = p_name AND (x.level <= graph_observations.level AND (x.level & 3) <= (graph_observations.level & 3) AND (x.level & ~(graph_observations.level) & 9223372036854775804) = 0) AND x.deleted_us IS NULL) THEN 1 ELSE 0 END WHERE agent_id = p_agent AND name = p_name AND deleted_us IS NULL AND (sm_operator() OR p_agent = sm_agent())
       $$""",
]
