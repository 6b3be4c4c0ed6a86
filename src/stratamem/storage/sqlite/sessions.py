"""Session rows on SQLite: reading, opening or resuming, and the operator's change of limits.

The rules (fixed limits on resume, owner, refusals) are ``session_rules``';
this module is only their SQL. ``append`` is the backend's audit append, so
every change commits together with its event.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from ...audit import AuditDraft
from ...errors import NotFound
from ...levels import Level
from ...models import AuditEvent
from ..records import SessionRecord
from ..sql import session_rules
from ..sql.rows import from_us, to_us

Append = Callable[[sqlite3.Connection, AuditDraft, datetime], AuditEvent]
COLUMNS = "id, agent_id, clearance, peers, taint, created_us, owner"


def read(conn: sqlite3.Connection, session_id: str) -> SessionRecord:
    """The session's row as it is in this transaction (every operation reads it: the taint is live)."""
    row = conn.execute(f"SELECT {COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise NotFound(f"no session {session_id!r}")
    return _record(row)


@lru_cache(maxsize=1024)
def _record(row: tuple[Any, ...]) -> SessionRecord:
    """A row as a record: a pure function of the row's values (the record is immutable), so the parse of
    an unchanged row is kept — the row itself is still read in every transaction."""
    return SessionRecord(
        id=row[0],
        agent_id=row[1],
        clearance=Level(row[2]),
        peers=tuple(json.loads(row[3])),
        taint=Level(row[4]),
        created_at=from_us(row[5]),
        owner=row[6],
    )


def open_session(
    conn: sqlite3.Connection,
    append: Append,
    agent_id: str,
    session_id: str | None,
    clearance: Level | None,
    peers: Sequence[str] | None,
    now: datetime,
    owner: str | None,
) -> SessionRecord:
    exists = (
        session_id is not None
        and conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None
    )
    if exists and session_id is not None:  # (exists implies an id; said again for the type checker)
        record = read(conn, session_id)
        session_rules.check_resume(record, agent_id, clearance, peers, owner)
        op = "session.resume"
    else:
        new_clearance, new_peers = session_rules.new_limits(clearance, peers)
        new_id = session_id or str(uuid.uuid4())
        conn.execute(
            f"INSERT INTO sessions ({COLUMNS}) VALUES (?,?,?,?,?,?,?)",
            (
                new_id,
                agent_id,
                int(new_clearance),
                json.dumps(list(new_peers)),
                int(Level.PUBLIC),
                to_us(now),
                owner,
            ),
        )
        record = read(conn, new_id)
        op = "session.open"
    append(conn, session_rules.opened_draft(op, record), now)
    return record


def set_limits(
    conn: sqlite3.Connection,
    append: Append,
    session_id: str,
    clearance: Level | None,
    peers: Sequence[str] | None,
    now: datetime,
) -> SessionRecord:
    before = read(conn, session_id)
    new_clearance, new_peers = session_rules.changed_limits(before, clearance, peers)
    conn.execute(
        "UPDATE sessions SET clearance = ?, peers = ? WHERE id = ?",
        (int(new_clearance), json.dumps(list(new_peers)), session_id),
    )
    after = read(conn, session_id)
    append(conn, session_rules.limits_draft(before, after), now)
    return after
