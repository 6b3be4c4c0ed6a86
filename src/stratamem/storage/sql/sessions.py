"""Session rows in SQL written once for both engines: reading, opening or resuming, escalating, the
operator's change of limits, and the taint history.

What each may do is ``session_rules``'; this module is its SQL. Each engine runs these in its
own transaction: the session row read inside it (locked for an escalation), so the taint every
operation sees is the live one. ``open_body`` and ``escalate_body`` take the engine's own read of
the row (PostgreSQL binds the transaction to the session as it reads it, for row-level
security) and return the audit event for the caller to chain in the same transaction.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ...audit import AuditDraft
from ...errors import ClearanceError, NotFound
from ...labels import join, level_of, outside_clearance, reads
from ...levels import Level
from ...models import TaintEvent
from ..records import SessionRecord, SessionRequest
from . import session_rules
from .dialect import Dialect
from .rows import from_us, to_us

if TYPE_CHECKING:
    from ..transaction import Tx

COLUMNS = "id, agent_id, clearance, peers, taint, created_us, owner"

# The engine's read of a session row in the running transaction (raises NotFound).
Reader = Callable[[Any, str], SessionRecord]


def record(row: Sequence[Any], dialect: Dialect) -> SessionRecord:
    """A ``COLUMNS`` row (possibly followed by other columns) as a record."""
    return _record((dialect.text(row[0]), *row[1:7]))


@lru_cache(maxsize=1024)
def _record(row: tuple[Any, ...]) -> SessionRecord:
    """A pure function of the row's values (the record is immutable), so the parse of an unchanged row
    is kept — the row itself is still read in every transaction."""
    return SessionRecord(
        id=row[0],
        agent_id=row[1],
        clearance=level_of(row[2]),
        peers=tuple(json.loads(row[3])),
        taint=level_of(row[4]),
        created_at=from_us(row[5]),
        owner=row[6],
        clearance_code=int(row[2]),
        taint_code=int(row[4]),
    )


def read(conn: Any, dialect: Dialect, session_id: str, lock: str = "") -> SessionRecord:
    """The session's row as it is in this transaction (``lock``: PostgreSQL's ``FOR UPDATE``/``FOR SHARE``)."""
    row = conn.execute(
        dialect.sql(f"SELECT {COLUMNS} FROM sessions WHERE id = ? {lock}"), (dialect.encode(session_id),)
    ).fetchone()
    if row is None:
        raise NotFound(f"no session {session_id!r}")
    return record(row, dialect)


def open_body(
    conn: Any,
    dialect: Dialect,
    bound: Reader,
    request: SessionRequest,
    now: datetime,
) -> tuple[SessionRecord, AuditDraft]:
    """Open the session, or resume it when ``request.session_id`` exists (perhaps opened by another process
    a moment ago) and the resume keeps its agent, owner and limits."""
    new_id = request.session_id or str(uuid.uuid4())
    new_clearance, new_peers = session_rules.new_limits(request.clearance, request.peers)
    created = conn.execute(
        dialect.sql(
            f"INSERT INTO sessions ({COLUMNS}) VALUES (?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING RETURNING id"
        ),
        (
            dialect.encode(new_id),
            request.agent_id,
            int(new_clearance) | (request.compartments << 2),
            json.dumps(list(new_peers)),
            int(Level.PUBLIC),
            to_us(now),
            request.owner,
        ),
    ).fetchone()
    opened = bound(conn, new_id)
    if created is None:
        session_rules.check_resume(opened, request.agent_id, request.clearance, request.peers, request.owner)
        if request.compartments and request.compartments << 2 != opened.clearance_code & ~3:
            raise ClearanceError(
                f"session {opened.id!r} keeps the clearance it was created with; this resume asked for other "
                "compartments"
            )
    return opened, session_rules.opened_draft("session.open" if created else "session.resume", opened)


def escalate_body(
    conn: Any,
    dialect: Dialect,
    before: SessionRecord,
    change: tuple[int, str, str | None],
    now: datetime,
    bind_at: Callable[[int], None],
) -> tuple[SessionRecord, AuditDraft, ClearanceError | None]:
    """Raise the taint of the session read (locked) as ``before`` to the join of it and ``change``'s label
    (a level, or a level with compartment bits: ``stratamem.labels``), with its reason and source: the
    record after, the event, and the refusal to raise once the event is committed.

    The event is recorded at the joined label (when higher): the reason and source describe material
    there, so readers below it must not see them, whether or not the escalation succeeded. ``bind_at`` is
    called with that label first (PostgreSQL binds the transaction to it, so the audit policy accepts the
    event). A label outside the clearance — a level above it or a compartment it lacks — is refused with
    one message, whichever it was.
    """
    asked, reason, source = change
    at = join(before.taint_code, asked)
    if at != before.taint_code:
        bind_at(at)
    base = AuditDraft("escalate", before.id, before.agent_id, at, levels=(level_of(asked),))
    if not reads(before.clearance_code, asked):
        refused = outside_clearance()
        return before, replace(base, outcome="refused", detail={"reason": reason[:200]}), refused
    if at == before.taint_code:
        return before, replace(base, outcome="unchanged"), None
    conn.execute(dialect.sql("UPDATE sessions SET taint = ? WHERE id = ?"), (at, dialect.encode(before.id)))
    conn.execute(
        dialect.sql(
            "INSERT INTO taint_events (session_id, at_us, previous, new, reason, source) VALUES (?,?,?,?,?,?)"
        ),
        (
            dialect.encode(before.id),
            to_us(now),
            before.taint_code,
            at,
            dialect.encode(reason),
            dialect.encode(source),
        ),
    )
    after = read(conn, dialect, before.id)
    return (
        after,
        replace(base, detail={"reason": reason[:200], "source": source, "new": level_of(at).name}),
        None,
    )


def limits_body(
    tx: Tx[Any], session_id: str, clearance: Level | None, peers: Sequence[str] | None
) -> SessionRecord:
    """The operator's change of a session's limits (an operator body), its event chained with it."""
    before = read(tx.conn, tx.dialect, session_id, tx.dialect.for_update)
    new_clearance, new_peers = session_rules.changed_limits(before, clearance, peers)
    tx.conn.execute(
        tx.dialect.sql("UPDATE sessions SET clearance = ?, peers = ? WHERE id = ?"),
        (
            int(new_clearance) | (before.clearance_code & ~3),
            json.dumps(list(new_peers)),
            tx.dialect.encode(session_id),
        ),
    )
    after = read(tx.conn, tx.dialect, session_id)
    tx.append(session_rules.limits_draft(before, after))
    return after


def history_body(tx: Tx[Any], session_id: str) -> list[TaintEvent]:
    """The session's escalations in the order they happened (an escalation only ever raises the taint, so
    that order is the order of the levels it reached); none for a session that does not exist."""
    rows = tx.conn.execute(
        tx.dialect.sql(
            "SELECT at_us, previous, new, reason, source FROM taint_events WHERE session_id = ? ORDER BY new"
        ),
        (tx.dialect.encode(session_id),),
    ).fetchall()
    decode = tx.dialect.decode
    return [
        TaintEvent(from_us(a), level_of(p), level_of(n), tx.dialect.text(r), decode(s), p, n)
        for a, p, n, r, s in rows
    ]
