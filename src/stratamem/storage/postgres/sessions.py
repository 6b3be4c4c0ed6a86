"""Session rows on PostgreSQL: opening or resuming, and the operator's change of limits.

The rules are ``session_rules``' (shared with SQLite); this module is their
SQL. Callers pass the backend's audit append and session binder, so each
change commits with its event, and the transaction ends bound to the session
(row-level security) exactly as before.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

import psycopg

from ...audit import AuditDraft
from ...errors import NotFound
from ...levels import Level
from ...models import AuditEvent
from ..records import SessionRecord
from ..sql import session_rules
from ..sql.rows import to_us
from .connect import bind_operator
from .rows import enc

Append = Callable[[psycopg.Connection, AuditDraft, datetime], AuditEvent]
Binder = Callable[[psycopg.Connection, str], SessionRecord]
COLUMNS = "id, agent_id, clearance, peers, taint, created_us, owner"


def open_session(
    conn: psycopg.Connection,
    append: Append,
    bound: Binder,
    agent_id: str,
    session_id: str | None,
    clearance: Level | None,
    peers: Sequence[str] | None,
    now: datetime,
    owner: str | None,
) -> SessionRecord:
    new_id = session_id or str(uuid.uuid4())
    new_clearance, new_peers = session_rules.new_limits(clearance, peers)
    created = conn.execute(
        f"INSERT INTO sessions ({COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (id) DO NOTHING RETURNING id",
        (
            enc(new_id),
            agent_id,
            int(new_clearance),
            json.dumps(list(new_peers)),
            int(Level.PUBLIC),
            to_us(now),
            owner,
        ),
    ).fetchone()
    record = bound(conn, new_id)
    if created is None:  # it exists (perhaps opened by another process a moment ago): resume it
        session_rules.check_resume(record, agent_id, clearance, peers, owner)
    append(conn, session_rules.opened_draft("session.open" if created else "session.resume", record), now)
    return record


def set_limits(
    conn: psycopg.Connection,
    append: Append,
    read: Binder,
    session_id: str,
    clearance: Level | None,
    peers: Sequence[str] | None,
    now: datetime,
) -> SessionRecord:
    bind_operator(conn)
    row = conn.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (enc(session_id),)).fetchone()
    if row is None:
        raise NotFound(f"no session {session_id!r}")
    before = read(conn, session_id)
    new_clearance, new_peers = session_rules.changed_limits(before, clearance, peers)
    conn.execute(
        "UPDATE sessions SET clearance = %s, peers = %s WHERE id = %s",
        (int(new_clearance), json.dumps(list(new_peers)), enc(session_id)),
    )
    after = read(conn, session_id)
    append(conn, session_rules.limits_draft(before, after), now)
    return after
