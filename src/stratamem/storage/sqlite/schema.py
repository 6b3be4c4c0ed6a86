"""The SQLite store's schema: every version, in order, in one place, applied when a store opens.

``MIGRATIONS`` lists each version's step; ``upgrade`` brings a store to ``LATEST``. Each step runs in
its own ``BEGIN IMMEDIATE`` transaction that first reads the recorded version, so processes opening
the same file at once take turns (the second waits on SQLite's busy timeout, then finds the step
done) — the role PostgreSQL's advisory lock plays in ``postgres/schema.py``. The version is the
``schema_version`` row of ``meta``, which every store has carried since the first release; a store
recording a version above ``LATEST`` is refused, naming both versions.

Version 1 is the schema the first release (0.1.0) created. Until versions were counted, every store
recorded ``1`` whatever build wrote it, and builds brought their parts up to date at each open with
``IF NOT EXISTS`` statements and existence checks. So every step is idempotent — a store recording
``1`` may already hold any later step's parts — and step 2 completes a store that a development
build before 0.1.0 wrote (no session owner column, no turn or graph tables, no vectors). The steps
are frozen: a change of the schema is a new version at the end, never an edit of an earlier one.

Everything of the store lives here: memories and their index, sessions, audit, the turn's
tables, the knowledge graph and vectors. Two things stay elsewhere on purpose. The Markdown
backend's sidecar tables and triggers (``md_files``, ``md_dirty``) are the Markdown backend's own
(``storage/markdown/backend.py`` creates them idempotently when it opens its sidecar): a plain SQLite
store has no files to track and must not pay for triggers on every memory write. Its ``TEMP``
triggers live on one connection only and are not schema. Re-stemming the index when the store's
languages or the analyzer changed is data, not schema; the backend does it after ``upgrade``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from ...errors import StorageError

Step = Callable[[sqlite3.Connection], None]

# the 0.1.0 schema, exactly as that release created it (frozen)
RELEASE_TABLES = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    clearance INTEGER NOT NULL,
    peers TEXT NOT NULL,
    taint INTEGER NOT NULL,
    created_us INTEGER NOT NULL,
    owner TEXT
);
CREATE TABLE IF NOT EXISTS taint_events (
    session_id TEXT NOT NULL,
    at_us INTEGER NOT NULL,
    previous INTEGER NOT NULL,
    new INTEGER NOT NULL,
    reason TEXT NOT NULL,
    source TEXT
);
CREATE INDEX IF NOT EXISTS taint_events_session ON taint_events(session_id);
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    key TEXT NOT NULL,
    level INTEGER NOT NULL,
    content TEXT NOT NULL,
    tags TEXT NOT NULL,
    category TEXT NOT NULL,
    session_id TEXT,
    created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    lineage_id TEXT NOT NULL,
    expires_us INTEGER,
    deleted_us INTEGER,
    length INTEGER NOT NULL DEFAULT 0,
    shadowable INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS memories_live
    ON memories(agent_id, key, level) WHERE deleted_us IS NULL;
CREATE INDEX IF NOT EXISTS memories_recent
    ON memories(agent_id, updated_us) WHERE deleted_us IS NULL;
CREATE INDEX IF NOT EXISTS memories_expiring
    ON memories(expires_us) WHERE expires_us IS NOT NULL AND deleted_us IS NULL;
CREATE INDEX IF NOT EXISTS memories_shadowable
    ON memories(agent_id) WHERE shadowable = 1 AND deleted_us IS NULL;
CREATE INDEX IF NOT EXISTS memories_deleted
    ON memories(deleted_us) WHERE deleted_us IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_console
    ON memories(agent_id, key, level DESC, id);
CREATE TABLE IF NOT EXISTS postings (
    term TEXT NOT NULL,
    memory_id INTEGER NOT NULL,
    tf INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    length INTEGER NOT NULL,
    PRIMARY KEY (term, memory_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS term_stats (
    term TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    df INTEGER NOT NULL,
    PRIMARY KEY (term, agent_id, level)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS part_stats (
    agent_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    n INTEGER NOT NULL,
    total_len INTEGER NOT NULL,
    PRIMARY KEY (agent_id, level)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY,
    at_us INTEGER NOT NULL,
    session_id TEXT,
    agent_id TEXT,
    taint INTEGER NOT NULL,
    operation TEXT NOT NULL,
    keys TEXT NOT NULL,
    levels TEXT NOT NULL,
    lineage TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
)
"""

RELEASE_SESSION_INDEXES = """
CREATE INDEX IF NOT EXISTS sessions_owner ON sessions(owner) WHERE owner IS NOT NULL;
CREATE INDEX IF NOT EXISTS audit_session ON audit(session_id, seq)
"""

RELEASE_TURNS = """
CREATE TABLE IF NOT EXISTS turn_messages (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_calls TEXT NOT NULL,
    tool_call_id TEXT,
    origin TEXT,
    created_us INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS turn_messages_session ON turn_messages(session_id, agent_id, level, id);
CREATE INDEX IF NOT EXISTS turn_messages_created ON turn_messages(created_us);
CREATE TABLE IF NOT EXISTS turn_usage (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    cost_usd TEXT NOT NULL,
    at_us INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS turn_usage_agent ON turn_usage(agent_id, at_us)
"""

RELEASE_GRAPH = """
CREATE TABLE IF NOT EXISTS graph_nodes (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    name TEXT NOT NULL,
    level INTEGER NOT NULL,
    type TEXT NOT NULL,
    content TEXT NOT NULL,
    tags TEXT NOT NULL,
    source TEXT,
    session_id TEXT,
    created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    deleted_us INTEGER,
    length INTEGER NOT NULL DEFAULT 0,
    multi INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS graph_nodes_multi ON graph_nodes(agent_id) WHERE multi = 1 AND deleted_us IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS graph_nodes_live ON graph_nodes(agent_id, name, level) WHERE deleted_us IS NULL;
CREATE INDEX IF NOT EXISTS graph_nodes_deleted ON graph_nodes(deleted_us) WHERE deleted_us IS NOT NULL;
CREATE TABLE IF NOT EXISTS graph_observations (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    name TEXT NOT NULL,
    level INTEGER NOT NULL,
    text TEXT NOT NULL,
    session_id TEXT,
    created_us INTEGER NOT NULL,
    pos INTEGER NOT NULL,
    deleted_us INTEGER,
    length INTEGER NOT NULL DEFAULT 0,
    anchored INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS graph_observations_orphans ON graph_observations(agent_id)
    WHERE anchored = 0 AND deleted_us IS NULL;
CREATE INDEX IF NOT EXISTS graph_observations_name ON graph_observations(agent_id, name, level);
CREATE INDEX IF NOT EXISTS graph_observations_deleted ON graph_observations(deleted_us) WHERE deleted_us IS NOT NULL;
CREATE TABLE IF NOT EXISTS graph_edges (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    relation TEXT NOT NULL,
    level INTEGER NOT NULL,
    note TEXT,
    session_id TEXT,
    created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    deleted_us INTEGER
);
CREATE INDEX IF NOT EXISTS graph_edges_source ON graph_edges(agent_id, source, level);
CREATE INDEX IF NOT EXISTS graph_edges_target ON graph_edges(agent_id, target, level);
CREATE INDEX IF NOT EXISTS graph_edges_deleted ON graph_edges(deleted_us) WHERE deleted_us IS NOT NULL;
CREATE TABLE IF NOT EXISTS graph_postings (
    term TEXT NOT NULL,
    unit_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    name TEXT NOT NULL,
    level INTEGER NOT NULL,
    tf INTEGER NOT NULL,
    PRIMARY KEY (term, unit_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS graph_postings_unit ON graph_postings(unit_id);
CREATE TABLE IF NOT EXISTS graph_part_stats (
    agent_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    nodes INTEGER NOT NULL,
    node_len INTEGER NOT NULL,
    obs_len INTEGER NOT NULL,
    PRIMARY KEY (agent_id, level)
) WITHOUT ROWID
"""

RELEASE_VECTORS = """
CREATE TABLE IF NOT EXISTS vectors (
    memory_id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    live INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    model TEXT,
    scale REAL,
    vec BLOB);
CREATE INDEX IF NOT EXISTS vectors_seq ON vectors(seq);
CREATE INDEX IF NOT EXISTS vectors_pending ON vectors(agent_id, level) WHERE live = 1 AND model IS NULL
"""


def _run(conn: sqlite3.Connection, script: str) -> None:
    """Each statement of ``script`` in the caller's transaction (``executescript`` would commit it)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _release_schema(conn: sqlite3.Connection) -> None:
    """0.1.0's schema; on a store an earlier build wrote, only the parts it lacks."""
    _run(conn, RELEASE_TABLES)
    if "owner" not in {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}:
        conn.execute("ALTER TABLE sessions ADD COLUMN owner TEXT")
    _run(conn, RELEASE_SESSION_INDEXES)
    _run(conn, RELEASE_TURNS)
    _run(conn, RELEASE_GRAPH)
    _run(conn, RELEASE_VECTORS)
    if conn.execute("SELECT 1 FROM meta WHERE name = 'vectors_epoch'").fetchone() is None:
        # a store from before vectors: every live version gets a pending row (the cache's epoch starts)
        conn.execute(
            "INSERT OR IGNORE INTO vectors(memory_id, agent_id, level, live, seq) "
            "SELECT id, agent_id, level, 1, id FROM memories WHERE deleted_us IS NULL"
        )
        conn.execute(
            "INSERT INTO meta(name, value) VALUES ('vectors_epoch', '1') "
            "ON CONFLICT(name) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )


def _frequency_tail(conn: sqlite3.Connection) -> None:
    """``term_deltas``: document-frequency decrements of single writes (``frequency_tail``)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS term_deltas (id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, "
        "level INTEGER NOT NULL, delta INTEGER NOT NULL, terms TEXT NOT NULL)"
    )


def _postings_tail(conn: sqlite3.Connection) -> None:
    """``postings_tail``: single writes' postings, folded into ``postings`` in bulk (``postings_tail``)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS postings_tail (id INTEGER PRIMARY KEY, term TEXT NOT NULL, "
        "memory_id INTEGER NOT NULL, tf INTEGER NOT NULL, agent_id TEXT NOT NULL, level INTEGER NOT NULL, "
        "length INTEGER NOT NULL)"
    )


def _graph_lengths(conn: sqlite3.Connection) -> None:
    """Indexes carrying each node's and observation's length, so a graph search reads the visible
    document lengths of its matches from the indexes alone; the second replaces
    ``graph_observations_name``."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS graph_nodes_doc ON graph_nodes(agent_id, name, level, length) "
        "WHERE deleted_us IS NULL"
    )
    conn.execute("DROP INDEX IF EXISTS graph_observations_name")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS graph_observations_doc "
        "ON graph_observations(agent_id, name, level, deleted_us, length)"
    )


def _tail_counts(conn: sqlite3.Connection) -> None:
    """The postings tail counts its own document frequencies from now on. A store written when every
    tail row also had its +1 in ``term_deltas`` moves its tail into ``postings`` (its frequencies are
    counted there already) so no document is counted twice; ``meta.tail_counts`` marks it done."""
    if conn.execute("SELECT 1 FROM meta WHERE name = 'tail_counts'").fetchone() is None:
        columns = "term, memory_id, tf, agent_id, level, length"
        conn.execute(
            f"INSERT INTO postings({columns}) SELECT {columns} FROM postings_tail ORDER BY term, memory_id"
        )
        conn.execute("DELETE FROM postings_tail")
        conn.execute("INSERT INTO meta(name, value) VALUES ('tail_counts', '1')")


def _conversation_index(conn: sqlite3.Connection) -> None:
    """Conversation memories found by their own partial index (the scope rule reads them per session)."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memories_conversation ON memories(agent_id, level) "
        "WHERE category = 'conversation' AND deleted_us IS NULL"
    )


def _occurred_and_context(conn: sqlite3.Connection) -> None:
    """When a memory's event happened (``occurred_us``; NULL on older rows reads as ``created_us``, so
    the upgrade rewrites nothing) and the text that situates it (``context``, part of its embedding)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
    if "occurred_us" not in have:
        conn.execute("ALTER TABLE memories ADD COLUMN occurred_us INTEGER")
    if "context" not in have:
        conn.execute("ALTER TABLE memories ADD COLUMN context TEXT")


def _server_state(conn: sqlite3.Connection) -> None:
    """What a server keeps between requests (``storage/sql/server_state.py``)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS server_state (kind TEXT NOT NULL, key TEXT NOT NULL, "
        "principal TEXT NOT NULL, payload TEXT NOT NULL, expires_us INTEGER NOT NULL, PRIMARY KEY (kind, key))"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS server_state_expires ON server_state(expires_us)")


def _compartments(conn: sqlite3.Connection) -> None:
    """The store's compartments and the bit each holds in a label (``storage/sql/compartments.py``). Labels
    live in the ``level`` columns (``stratamem.labels``): a level is its own label, so no row changes."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS compartments (name TEXT PRIMARY KEY, bit INTEGER NOT NULL UNIQUE)"
    )


def _declassify_requests(conn: sqlite3.Connection) -> None:
    """The register of declassifications, requested and performed (``storage/sql/declassification.py``)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS declassify_requests (id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, "
        "key TEXT NOT NULL, from_level INTEGER NOT NULL, to_level INTEGER NOT NULL, reason TEXT NOT NULL, "
        "replacement TEXT, content_sha256 TEXT NOT NULL, actor TEXT NOT NULL, approver TEXT, "
        "status TEXT NOT NULL, created_us INTEGER NOT NULL, expires_us INTEGER, decided_us INTEGER)"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS declassify_requests_status ON declassify_requests(status, expires_us)"
    )


MIGRATIONS: Sequence[tuple[int, Step]] = (
    (1, _release_schema),
    (2, _release_schema),  # completes a store a development build before 0.1.0 recorded as version 1
    (3, _frequency_tail),
    (4, _postings_tail),
    (5, _graph_lengths),
    (6, _tail_counts),
    (7, _conversation_index),
    (8, _occurred_and_context),
    (9, _server_state),
    (10, _compartments),
    (11, _declassify_requests),
)
LATEST = MIGRATIONS[-1][0]


def recorded_version(conn: sqlite3.Connection) -> int:
    """The version the store records; 0 for an empty database."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
    if row is None:
        return 0
    try:
        return int(row[0])
    except ValueError:
        raise StorageError(f"the store's schema version {row[0]!r} is not a number") from None


def upgrade(conn: sqlite3.Connection, latest: int = LATEST) -> int:
    """Bring the store to version ``latest``, one transaction per version; returns the version found.

    ``conn`` is in autocommit mode (``isolation_level=None``) and in no transaction. ``latest`` below
    ``LATEST`` exists for the tests that build a store at an intermediate version.
    """
    found: int | None = None
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = recorded_version(conn)
            if found is None:
                found = version
            if version > LATEST:
                raise StorageError(
                    f"the store's schema is version {version}, newer than this stratamem ({LATEST}); "
                    "upgrade stratamem"
                )
            if version >= latest:
                conn.execute("COMMIT")
                return found
            target, step = MIGRATIONS[version]
            step(conn)
            conn.execute(
                "INSERT INTO meta(name, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                (str(target),),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
