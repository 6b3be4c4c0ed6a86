"""Deleting a memory version and restoring a deleted one, written once for both SQL engines.

A delete soft-deletes the own agent's live version at exactly the session's taint (the row is
kept, out of every index); the console's restore brings a soft-deleted row back as a save would
put it there, refused while a live version holds its (agent, key, level). What differs by engine
— how a key is locked against concurrent writers, how a version leaves or re-enters the inverted
index and statistics — is the engine's ``Versions``; the reads, the rules and the audit events
are here. Both run as bodies in the engine's own write transaction, their event chained in it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ...audit import AuditDraft
from ...errors import NotFound, ValidationError
from ...levels import Level
from ...models import Memory
from ..records import SessionRecord
from .rows import MEMORY_COLUMNS, MEMORY_WIDTH, stored_memory, to_us

if TYPE_CHECKING:
    from ..protocol import TransactionSeam as Seam
    from ..transaction import Tx

# (id, agent, key, level, content, tags, length) of a live version, as stored
LiveRow = tuple[Any, ...]


class Versions(Protocol):
    """How one engine keeps its index in step when a version leaves or comes back."""

    def lock(self, conn: Any, pairs: Iterable[tuple[str, str]]) -> None:
        """Serialise writers of these (agent, key) pairs for the rest of the transaction."""
        ...

    def retire(self, conn: Any, rows: Sequence[LiveRow], deleted_us: int | None) -> None:
        """Take live versions out of the index and statistics; soft-deleted as of ``deleted_us`` if given."""
        ...

    def revive(self, conn: Any, row: Sequence[Any]) -> None:
        """A soft-deleted ``MEMORY_COLUMNS`` row made live again: index, statistics, shadowing flags."""
        ...


def delete_body(tx: Tx[Any], versions: Versions, key: str) -> tuple[SessionRecord, Memory | None]:
    """Soft-delete the own agent's live ``key`` at the session's live taint; None (and a ``not_found``
    event) when there is none there. The caller raises ``not_found`` once the event is committed."""
    record, ph = tx.record, tx.dialect.positional
    versions.lock(tx.conn, [(record.agent_id, key)])
    row = tx.conn.execute(
        f"SELECT {MEMORY_COLUMNS}, length FROM memories WHERE agent_id = {ph} AND key = {ph} AND level = {ph} "
        f"AND deleted_us IS NULL AND (expires_us IS NULL OR expires_us > {ph})",
        (record.agent_id, key, record.taint_code, to_us(tx.now)),
    ).fetchone()
    event = AuditDraft("delete", record.id, record.agent_id, record.taint_code, (key,), (record.taint,))
    if row is None:
        tx.append(replace(event, outcome="not_found"))
        return record, None
    memory = stored_memory(row, tx.dialect.decode)
    versions.retire(tx.conn, [(*row[:6], row[MEMORY_WIDTH])], to_us(tx.now))
    tx.append(replace(event, levels=(memory.level,), lineage_ids=(memory.lineage_id,)))
    return record, memory


def delete(seam: Seam, versions: Versions, session_id: str, key: str, now: datetime) -> Memory:
    """``delete_body`` in one session write; ``NotFound`` (naming the session's level only) once its
    ``not_found`` event is committed."""
    record, memory = seam.write(session_id, now, lambda tx: delete_body(tx, versions, key))
    if memory is None:
        raise NotFound(f"no memory with key {key!r} at level {record.taint.name}")
    return memory


def restore_body(tx: Tx[Any], versions: Versions, ref: int, clearance: Level, actor: str) -> Memory:
    """Make soft-deleted row ``ref`` (at or below ``clearance``) live again, an operator act; refused when
    a live version holds its (agent, key, level), unless that one has expired (retired as a save would)."""
    conn, ph = tx.conn, tx.dialect.positional
    head = conn.execute(
        f"SELECT agent_id, key FROM memories WHERE id = {ph} AND level <= {ph} AND deleted_us IS NOT NULL",
        (ref, int(clearance)),
    ).fetchone()
    if head is not None:
        versions.lock(conn, [(head[0], head[1])])
        row = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = {ph} AND deleted_us IS NOT NULL", (ref,)
        ).fetchone()
    if head is None or row is None:
        raise NotFound(f"no deleted record {ref} at or below {clearance.name}")
    agent, key, level = row[1], row[2], row[3]
    holder = conn.execute(
        "SELECT id, agent_id, key, level, content, tags, length, expires_us FROM memories "
        f"WHERE agent_id = {ph} AND key = {ph} AND level = {ph} AND deleted_us IS NULL",
        (agent, key, level),
    ).fetchone()
    if holder is not None and holder[7] is not None and holder[7] <= to_us(tx.now):
        versions.retire(conn, [holder[:7]], holder[7])
    elif holder is not None:
        raise ValidationError(f"a live version of {key!r} exists at {Level(level).name}; delete it first")
    versions.revive(conn, row)
    memory = stored_memory(row, tx.dialect.decode)
    tx.append(
        AuditDraft(
            "restore",
            None,
            agent,
            memory.level,
            (key,),
            (memory.level,),
            (memory.lineage_id,),
            detail={"by": actor},
        )
    )
    return memory
