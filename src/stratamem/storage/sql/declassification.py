"""Declassification — the one way a record's content moves to a lower label — in SQL written once for both
engines.

A declassification writes a NEW live version of a record at a label strictly below the one it is live at,
keeping the original where it is and the same lineage id, so history links the two. The new version goes in
through the engine's own version writing (``Writer.write``: the index, statistics, shadowing flags and
vector upkeep every save has) inside one operator transaction with its ``declassify`` audit event and its
row in ``declassify_requests``, the register of every request and every downgrade performed. Under the
two-person rule a request waits there (``pending``) until a different operator approves it before its
expiry; ``approve`` re-reads the row under a lock in the performing transaction, so one request is
performed at most once and a stale approval writes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ...audit import operator_draft
from ...errors import NotFound, PolicyBlocked, ValidationError
from ...labels import level_of
from ...models import Memory
from .deletion import Versions
from .rows import MEMORY_COLUMNS, from_us, stored_memory, to_us

if TYPE_CHECKING:
    from ..transaction import Tx

PENDING, DONE, DENIED, EXPIRED = "pending", "done", "denied", "expired"
STATUSES = (PENDING, DONE, DENIED, EXPIRED)

_COLUMNS = (
    "id, agent_id, key, from_level, to_level, reason, actor, approver, status, content_sha256, "
    "replacement IS NOT NULL, created_us, expires_us, decided_us"
)


def content_sha256(content: str) -> str:
    """The digest the audit event records of the content written at the lower label."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class Order:
    """One declassification, validated by the caller: labels as stored codes, ``from_name``/``to_name``
    as the audit event names them. ``request_id`` approves that pending request (its own fields are the
    order's); ``expected_sha256`` is the content hash the request was made for."""

    agent_id: str
    key: str
    from_code: int
    to_code: int
    from_name: str
    to_name: str
    reason: str
    actor: str
    approver: str | None = None
    replacement: str | None = None
    request_id: int | None = None
    expected_sha256: str | None = None


@dataclass(frozen=True, slots=True)
class RequestRow:
    """A row of ``declassify_requests`` as stored (labels as codes; ``status`` reads ``expired`` for a
    pending request past its expiry)."""

    id: int
    agent_id: str
    key: str
    from_code: int
    to_code: int
    reason: str
    actor: str
    approver: str | None
    status: str
    content_sha256: str
    replaced: bool
    created_at: datetime
    expires_at: datetime | None
    decided_at: datetime | None


class Writer(Versions, Protocol):
    """An engine's ``Versions`` that can also write a version as an import does (every field given)."""

    def write(self, conn: Any, memory: Memory, now_us: int) -> Memory:
        """Insert or update the live version at ``memory``'s (agent, key, label) with its index upkeep."""
        ...


def _live(tx: Tx[Any], agent: str, key: str, code: int, name: str) -> Memory:
    ph = tx.dialect.positional
    row = tx.conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE agent_id = {ph} AND key = {ph} AND level = {ph} "
        f"AND deleted_us IS NULL AND (expires_us IS NULL OR expires_us > {ph})",
        (agent, key, code, to_us(tx.now)),
    ).fetchone()
    if row is None:
        raise NotFound(f"no live memory {key!r} of agent {agent!r} at {name}")
    return stored_memory(row, tx.dialect.decode)


def request_row(tx: Tx[Any], request_id: int, *, lock: bool) -> RequestRow:
    rows = read_rows(tx, f"WHERE id = {tx.dialect.positional}", (request_id,), lock=lock)
    if not rows:
        raise NotFound(f"no declassification request {request_id}")
    return rows[0]


def decidable(row: RequestRow) -> None:
    """Refuse deciding a request that is not pending any more (a stale approval)."""
    if row.status != PENDING:
        when = "" if row.status != EXPIRED or row.expires_at is None else f" at {row.expires_at.isoformat()}"
        raise ValidationError(f"stale approval: declassification request {row.id} is {row.status}{when}")


def approvable(row: RequestRow, approver: str) -> None:
    """The two-person rule: a pending request, approved by an operator other than the one who asked."""
    decidable(row)
    if approver == row.actor:
        raise PolicyBlocked(f"declassification request {row.id} needs an operator other than {row.actor!r}")


def declassify_body(tx: Tx[Any], writer: Writer, order: Order) -> tuple[Memory, int]:
    """Perform ``order``: the new version at ``to_code``, its register row and its audit event; returns
    the version as stored and the request's id. Raising leaves nothing written."""
    if order.request_id is not None:
        approvable(request_row(tx, order.request_id, lock=True), order.approver or "")
    writer.lock(tx.conn, [(order.agent_id, order.key)])
    original = _live(tx, order.agent_id, order.key, order.from_code, order.from_name)
    content = original.content if order.replacement is None else order.replacement
    digest = content_sha256(content)
    if order.expected_sha256 is not None and digest != order.expected_sha256:
        raise ValidationError(
            f"stale approval: {order.key!r} changed at {order.from_name} since the request; ask again"
        )
    now_us = to_us(tx.now)
    version = replace(
        original,
        content=content,
        level=level_of(order.to_code),
        label_code=order.to_code,
        session_id=None,  # written by an operator, not by a session
        created_at=tx.now,
        updated_at=tx.now,
    )
    stored = writer.write(tx.conn, version, now_us)
    request_id = _record_done(tx, order, digest, now_us)
    detail = {
        "from": order.from_name,
        "to": order.to_name,
        "reason": order.reason,
        "content_sha256": digest,
        "actor": order.actor,
        "approver": order.approver,
        "request": request_id,
    }
    _event(tx, "declassify", order, stored, detail)
    return stored, request_id


def _event(tx: Tx[Any], operation: str, order: Order, version: Memory, detail: dict[str, Any]) -> None:
    """An operator event naming the record (agent, key, the version's label and lineage)."""
    draft = operator_draft(operation, agent_id=order.agent_id, keys=(order.key,), detail=detail)
    tx.append(replace(draft, levels=(version.level,), lineage_ids=(version.lineage_id,)))


def _record_done(tx: Tx[Any], order: Order, digest: str, now_us: int) -> int:
    sql = tx.dialect.sql
    if order.request_id is not None:
        tx.conn.execute(
            sql("UPDATE declassify_requests SET status = ?, approver = ?, decided_us = ? WHERE id = ?"),
            (DONE, order.approver, now_us, order.request_id),
        )
        return order.request_id
    return _insert(tx, order, digest, DONE, None, now_us)


_INSERT = (
    "INSERT INTO declassify_requests (agent_id, key, from_level, to_level, reason, replacement, content_sha256, "
    "actor, approver, status, created_us, expires_us, decided_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def _insert(
    tx: Tx[Any], order: Order, digest: str, status: str, expires_us: int | None, decided: int | None
) -> int:
    """A register row: a pending request (``expires_us``) or a downgrade performed at once (``decided``)."""
    encode = tx.dialect.encode
    fields = (order.agent_id, order.key, order.from_code, order.to_code, encode(order.reason))
    rest = (encode(order.replacement), digest, order.actor, order.approver, status, to_us(tx.now))
    return tx.dialect.inserted_id(tx.conn, tx.dialect.sql(_INSERT), (*fields, *rest, expires_us, decided))


def request_body(tx: Tx[Any], order: Order, expires: datetime) -> int:
    """A pending request for ``order`` (the record must be live at ``from_code`` now); its id."""
    original = _live(tx, order.agent_id, order.key, order.from_code, order.from_name)
    content = original.content if order.replacement is None else order.replacement
    digest = content_sha256(content)
    request_id = _insert(tx, order, digest, PENDING, to_us(expires), None)
    detail: dict[str, Any] = {"from": order.from_name, "to": order.to_name, "reason": order.reason}
    detail |= {"actor": order.actor}
    detail |= {"request": request_id, "content_sha256": digest, "expires": expires.isoformat()}
    _event(tx, "declassify.request", order, original, detail)
    return request_id


def deny_body(tx: Tx[Any], request_id: int, by: str) -> RequestRow:
    """Refuse a pending request (any operator, the one who asked included: a withdrawal)."""
    row = request_row(tx, request_id, lock=True)
    decidable(row)
    tx.conn.execute(
        tx.dialect.sql(
            "UPDATE declassify_requests SET status = ?, approver = ?, decided_us = ? WHERE id = ?"
        ),
        (DENIED, by, to_us(tx.now), request_id),
    )
    tx.append(
        operator_draft(
            "declassify.deny",
            agent_id=row.agent_id,
            keys=(row.key,),
            detail={"request": request_id, "by": by, "actor": row.actor},
        )
    )
    return replace(row, status=DENIED, approver=by, decided_at=tx.now)


def request_replacement(tx: Tx[Any], request_id: int) -> str | None:
    """The redacted text a request carries (None: the content as it is)."""
    row = tx.conn.execute(
        tx.dialect.sql("SELECT replacement FROM declassify_requests WHERE id = ?"), (request_id,)
    ).fetchone()
    return None if row is None else tx.dialect.decode(row[0])


def read_rows(
    tx: Tx[Any], where: str, params: Sequence[Any], *, limit: int | None = None, lock: bool = False
) -> list[RequestRow]:
    """Register rows matching ``where`` (this engine's spelling), newest first, at most ``limit``."""
    tail = "" if limit is None else f" LIMIT {int(limit)}"
    tail += f" {tx.dialect.for_update}" if lock else ""
    rows = tx.conn.execute(
        f"SELECT {_COLUMNS} FROM declassify_requests {where} ORDER BY id DESC{tail}", params
    ).fetchall()
    now_us = to_us(tx.now)
    return [_row(row, now_us, tx.dialect.text) for row in rows]


def _row(row: Sequence[Any], now_us: int, text: Any) -> RequestRow:
    status, expires_us = row[8], row[12]
    if status == PENDING and expires_us is not None and expires_us <= now_us:
        status = EXPIRED
    return RequestRow(
        int(row[0]),
        row[1],
        row[2],
        int(row[3]),
        int(row[4]),
        text(row[5]),
        row[6],
        row[7],
        status,
        row[9],
        bool(row[10]),
        from_us(row[11]),
        None if expires_us is None else from_us(expires_us),
        None if row[13] is None else from_us(row[13]),
    )


def page_body(
    tx: Tx[Any], status: str | None, limit: int, before: int | None
) -> tuple[list[RequestRow], bool]:
    """One page of the register, newest first (``before``: continue below that id), and whether more exist."""
    ph, now_us = tx.dialect.positional, to_us(tx.now)
    tests: list[str] = []
    params: list[Any] = []
    if status in (PENDING, EXPIRED):
        tests.append(f"status = {ph} AND expires_us {'>' if status == PENDING else '<='} {ph}")
        params += [PENDING, now_us]
    elif status is not None:
        tests.append(f"status = {ph}")
        params.append(status)
    if before is not None:
        tests.append(f"id < {ph}")
        params.append(before)
    where = ("WHERE " + " AND ".join(tests)) if tests else ""
    rows = read_rows(tx, where, params, limit=limit + 1)
    return rows[:limit], len(rows) > limit
