"""Operator reads for the console, written once for both backends.

Every query here takes the reader's clearance (a label as storage keeps it,
``stratamem.labels``; a Level is its own) and never returns, counts or orders
by a row outside it: the console's visibility rule is "label within the
clearance" (``labels.visible_sql``), across agents (the operator's view), and
a session's taint history or an audit event is shown only when its taint is
within the clearance. Results are always bounded (``MAX_PAGE``) and paged by keyset
cursors, so a first page costs the same on a store of any size.

The SQL is written with ``?`` placeholders and run through the backend's
:class:`~.dialect.Dialect` (placeholders, the tag test, ``LIKE``, the decoding
of NUL-escaped text), so one text of each query serves both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ...labels import level_of, visible_args, visible_sql
from ...levels import Level
from ...models import AuditEvent, Memory, TaintEvent
from ..records import ONE_SHOT_PREFIX, SessionRecord
from .audit_pages import AuditQuery, audit_sql, descending
from .dialect import Dialect
from .rows import MEMORY_COLUMNS, MEMORY_WIDTH, from_us, row_to_event, row_to_memory, to_us

if TYPE_CHECKING:
    from ..transaction import Body, Tx

T = TypeVar("T")

MAX_PAGE = 200
MAX_VERSIONS = 200
STATUSES = ("all", "live", "deleted", "expired")
# The console's own reads are audited as operations with this prefix (``console.memories``, ...); a
# record's lineage may leave them out, counting at most this many of them (a bounded read).
OPERATOR_READ_PREFIX = "console."
MAX_COUNTED_READS = 10_000

Rows = list[tuple[Any, ...]]
Runner = Callable[[str, Sequence[Any]], Rows]


def read_body(reader: Callable[[Runner, Dialect], T]) -> Body[Any, T]:
    """``reader`` as the body of an operator read: its queries run on the transaction's connection."""

    def run(tx: Tx[Any]) -> T:
        return reader(lambda sql, params: tx.conn.execute(sql, params).fetchall(), tx.dialect)

    return run


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """One page of one agent's records within ``clearance`` (a label's code), every status unless asked;
    ``level`` keeps the records of that level (whatever their compartments)."""

    clearance: int
    agent_id: str
    level: Level | None = None
    tag: str | None = None
    category: str | None = None
    text: str | None = None
    status: str = "all"
    after: tuple[str, int, int] | None = None  # (key, label code, ref) of the last row of the previous page
    limit: int = 50


@dataclass(frozen=True, slots=True)
class ConsoleRecord:
    """A stored version as the console shows it, with how a session at the clearance would see it.

    ``state`` is ``shown`` (what ``get`` would return), ``shadowed`` (a higher
    live version of the key within the clearance hides it), ``deleted`` or
    ``expired``. ``ref`` is the row's identity for operator actions.
    """

    ref: int
    memory: Memory
    deleted_at: datetime | None
    state: str


@dataclass(frozen=True, slots=True)
class AgentSummary:
    """One agent's versions per level name: live (neither deleted nor expired), deleted, expired."""

    agent_id: str
    live: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    expired: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SessionSummary:
    record: SessionRecord
    history: tuple[TaintEvent, ...]


@dataclass(frozen=True, slots=True)
class AuditRow:
    """An audit row; ``event`` is None when the stored fields no longer parse (an edited row)."""

    seq: int
    event: AuditEvent | None


@dataclass(frozen=True, slots=True)
class Lineage:
    """A page of a record's audit events and how many of the console's own reads it spans.

    ``operator_reads`` counts those within the clearance from the page's start
    down to its last event (to the log's start when the page is not full), at
    most ``MAX_COUNTED_READS`` (``capped`` when there are more); ``events`` lists
    them only when they were asked for.
    """

    events: list[AuditRow]
    operator_reads: int
    capped: bool


def clamp(limit: object, default: int = 50, high: int = MAX_PAGE) -> int:
    return max(1, min(high, limit)) if isinstance(limit, int) and not isinstance(limit, bool) else default


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _memory(dialect: Dialect, row: Sequence[Any]) -> Memory:
    row = list(row[:MEMORY_WIDTH])
    row[4], row[7] = dialect.decode(row[4]), dialect.decode(row[7])
    return row_to_memory(row)


def _live_tops(
    run: Runner, dialect: Dialect, clearance: int, agent: str, keys: Sequence[str], now_us: int
) -> dict[str, int]:
    """Per key, the greatest live unexpired label code within the clearance: the version a session would
    see (the shadowing order)."""
    if not keys:
        return {}
    marks = ", ".join("?" * len(keys))
    rows = run(
        dialect.sql(
            f"SELECT key, max(level) FROM memories WHERE agent_id = ? AND key IN ({marks}) AND {_VISIBLE} "
            "AND deleted_us IS NULL AND (expires_us IS NULL OR expires_us > ?) GROUP BY key"
        ),
        [agent, *keys, *visible_args(clearance), now_us],
    )
    return {key: level for key, level in rows}


def _records(
    run: Runner, dialect: Dialect, rows: Rows, clearance: int, agent: str, now_us: int
) -> list[ConsoleRecord]:
    tops = _live_tops(run, dialect, clearance, agent, sorted({r[2] for r in rows}), now_us)
    out = []
    for row in rows:
        memory = _memory(dialect, row)
        deleted_us = row[MEMORY_WIDTH]
        if deleted_us is not None:
            state = "deleted"
        elif row[11] is not None and row[11] <= now_us:
            state = "expired"
        else:
            state = "shown" if tops.get(memory.key) == row[3] else "shadowed"
        out.append(
            ConsoleRecord(row[0], memory, from_us(deleted_us) if deleted_us is not None else None, state)
        )
    return out


_VISIBLE = visible_sql("level", "?", "?", "?")
_VISIBLE_D = visible_sql("d.level", "?", "?", "?")
COLUMNS = f"{MEMORY_COLUMNS.replace('id,', 'd.id,', 1)}, d.deleted_us"


def memories(run: Runner, dialect: Dialect, q: MemoryQuery, now: datetime) -> list[ConsoleRecord]:
    """One page of ``q.agent_id``'s records (every version, every status), by key then level, highest first."""
    now_us = to_us(now)
    where = ["d.agent_id = ?", visible_sql("d.level", "?", "?", "?")]
    params: list[object] = [q.agent_id, *visible_args(q.clearance)]
    if q.level is not None:
        where.append("(d.level & 3) = ?")
        params.append(int(q.level))
    if q.tag is not None:
        # a cheap substring test of the stored JSON first (tags are stored as json.dumps), then the exact one
        where.append(f"d.tags LIKE ? ESCAPE '\\' AND {dialect.has_tag.format(p='?')}")
        params += [_like_pattern(json.dumps(q.tag)), q.tag]
    if q.category is not None:
        where.append("d.category = ?")
        params.append(q.category)
    if q.text:
        where.append(f"(d.key {dialect.like} ? ESCAPE '\\' OR d.content {dialect.like} ? ESCAPE '\\')")
        params += [_like_pattern(q.text)] * 2
    if q.status == "live":
        where.append("d.deleted_us IS NULL AND (d.expires_us IS NULL OR d.expires_us > ?)")
        params.append(now_us)
    elif q.status == "deleted":
        where.append("d.deleted_us IS NOT NULL")
    elif q.status == "expired":
        where.append("d.deleted_us IS NULL AND d.expires_us IS NOT NULL AND d.expires_us <= ?")
        params.append(now_us)
    if q.after is not None:
        key, level, ref = q.after
        where.append("(d.key > ? OR (d.key = ? AND (d.level < ? OR (d.level = ? AND d.id > ?))))")
        params += [key, key, level, level, ref]
    rows = run(
        dialect.sql(
            f"SELECT {COLUMNS} FROM memories d WHERE {' AND '.join(where)} "
            "ORDER BY d.key, d.level DESC, d.id LIMIT ?"
        ),
        [*params, clamp(q.limit)],
    )
    return _records(run, dialect, rows, q.clearance, q.agent_id, now_us)


def versions(
    run: Runner, dialect: Dialect, clearance: int, agent: str, key: str, now: datetime
) -> list[ConsoleRecord]:
    """Every version of one key within the clearance (live and deleted), highest label code first."""
    rows = run(
        dialect.sql(
            f"SELECT {COLUMNS} FROM memories d WHERE d.agent_id = ? AND d.key = ? AND {_VISIBLE_D} "
            "ORDER BY d.level DESC, d.deleted_us IS NOT NULL, d.deleted_us DESC, d.id LIMIT ?"
        ),
        [agent, key, *visible_args(clearance), MAX_VERSIONS],
    )
    return _records(run, dialect, rows, clearance, agent, to_us(now))


def record(run: Runner, dialect: Dialect, clearance: int, ref: int, now: datetime) -> ConsoleRecord | None:
    """One row by ref, or None when missing or outside the clearance (indistinguishable)."""
    rows = run(
        dialect.sql(f"SELECT {COLUMNS} FROM memories d WHERE d.id = ? AND {_VISIBLE_D}"),
        [ref, *visible_args(clearance)],
    )
    if not rows:
        return None
    return _records(run, dialect, rows, clearance, rows[0][1], to_us(now))[0]


def agents(
    run: Runner, dialect: Dialect, clearance: int, after: str | None, limit: int, now: datetime
) -> list[AgentSummary]:
    """Agents with records within the clearance, by name, with live, deleted and expired counts per level.

    ``part_stats`` counts every version not deleted, so expired ones (kept until a
    purge) are taken out of it here; deleted and expired ones are counted from
    their (small) sets of rows, each through its partial index.
    """
    label, start = list(visible_args(clearance)), after if after is not None else ""
    gone = run(
        dialect.sql(
            f"SELECT agent_id, level, count(*) FROM memories {dialect.deleted_hint} "
            f"WHERE deleted_us IS NOT NULL AND {_VISIBLE} GROUP BY agent_id, level"
        ),
        label,
    )
    live_names = [
        r[0]
        for r in run(
            dialect.sql(
                f"SELECT DISTINCT agent_id FROM part_stats WHERE {_VISIBLE} AND n > 0 AND agent_id > ? "
                "ORDER BY agent_id LIMIT ?"
            ),
            [*label, start, clamp(limit)],
        )
    ]
    names = sorted({*live_names, *(r[0] for r in gone if r[0] > start)})[: clamp(limit)]
    if not names:
        return []
    marks = ", ".join("?" * len(names))
    live = run(
        dialect.sql(
            f"SELECT agent_id, level, n FROM part_stats WHERE agent_id IN ({marks}) AND {_VISIBLE} AND n > 0"
        ),
        [*names, *label],
    )
    # every agent's, like the deleted ones: an agent test would lead the planner to scan the agent's rows
    expired = run(
        dialect.sql(
            "SELECT agent_id, level, count(*) FROM memories WHERE expires_us IS NOT NULL "
            f"AND deleted_us IS NULL AND expires_us <= ? AND {_VISIBLE} GROUP BY agent_id, level"
        ),
        [to_us(now), *label],
    )
    out = {name: AgentSummary(name) for name in names}
    stored: dict[str, dict[str, int]] = {name: {} for name in names}
    # counted per level name: the labels of one level (its compartment sets) add up
    for rows_, counts in ((expired, "expired"), (live, None), (gone, "deleted")):
        for agent, lv, n in rows_:
            if agent in out:
                into = stored[agent] if counts is None else getattr(out[agent], counts)
                into[level_of(lv).name] = into.get(level_of(lv).name, 0) + int(n)
    for agent, per_level in stored.items():
        for name, n in per_level.items():
            if n > out[agent].expired.get(name, 0):
                out[agent].live[name] = n - out[agent].expired.get(name, 0)
    return list(out.values())


def sessions(
    run: Runner,
    dialect: Dialect,
    clearance: int,
    agent: str | None,
    after: tuple[int, str] | None,
    limit: int,
    one_shot: bool = True,
) -> list[SessionSummary]:
    """Sessions whose taint is within the clearance, newest first, with their taint history.

    Without ``one_shot`` the sessions CLI commands open for themselves are left out: a prefix
    comparison with the prefix bound (``LIKE`` would read ``_`` and ``%`` in it as wildcards).
    """
    where, params = [visible_sql("taint", "?", "?", "?")], list[object](visible_args(clearance))
    if agent is not None:
        where.append("agent_id = ?")
        params.append(agent)
    if not one_shot:
        where.append(f"substr(id, 1, {len(ONE_SHOT_PREFIX)}) <> ?")
        params.append(ONE_SHOT_PREFIX)
    if after is not None:
        created_us, sid = after
        where.append("(created_us < ? OR (created_us = ? AND id < ?))")
        params += [created_us, created_us, sid]
    rows = run(
        dialect.sql(
            f"SELECT id, agent_id, clearance, peers, taint, created_us FROM sessions "
            f"WHERE {' AND '.join(where)} ORDER BY created_us DESC, id DESC LIMIT ?"
        ),
        [*params, clamp(limit)],
    )
    if not rows:
        return []
    marks = ", ".join("?" * len(rows))
    history: dict[str, list[TaintEvent]] = {r[0]: [] for r in rows}
    for sid, at, prev, new, reason, source in run(
        dialect.sql(
            f"SELECT session_id, at_us, previous, new, reason, source FROM taint_events "
            f"WHERE session_id IN ({marks}) ORDER BY at_us"
        ),
        [r[0] for r in rows],
    ):
        history[sid].append(
            TaintEvent(
                from_us(at),
                level_of(prev),
                level_of(new),
                dialect.text(reason),
                dialect.decode(source),
                prev,
                new,
            )
        )
    return [
        SessionSummary(
            SessionRecord(
                dialect.text(r[0]),
                r[1],
                level_of(r[2]),
                tuple(json.loads(r[3])),
                level_of(r[4]),
                from_us(r[5]),
                clearance_code=int(r[2]),
                taint_code=int(r[4]),
            ),
            tuple(history[r[0]]),
        )
        for r in rows
    ]


AUDIT_COLUMNS = (
    "seq, at_us, session_id, agent_id, taint, operation, keys, levels, lineage, outcome, detail, "
    "prev_hash, hash"
)


def _audit_rows(dialect: Dialect, rows: Rows) -> list[AuditRow]:
    """Rows of ``AUDIT_COLUMNS`` as they are read: one that no longer parses (an edited row) as such."""
    out = []
    for row in rows:
        fields = list(row)
        fields[2] = dialect.decode(fields[2])
        try:
            event: AuditEvent | None = row_to_event(fields)
        except (ValueError, KeyError, TypeError):
            event = None
        out.append(AuditRow(row[0], event))
    return out


def audit(
    run: Runner,
    dialect: Dialect,
    clearance: int,
    before: int | None,
    limit: int,
    lineage: str | None = None,
    operator_reads: bool = True,
) -> list[AuditRow]:
    """Audit rows the operator may read at the clearance, newest first (the one rule of ``audit_query``).

    Without ``operator_reads`` the console's own reads are left out. Rows that
    no longer parse (edited in the database) are returned as such, so the page
    can show where the log was touched instead of failing.
    """
    query = AuditQuery(clearance, None, lineage, None, before, clamp(limit))
    where, params = audit_sql(query, dialect, substring_first=True)
    source = "audit"
    if not operator_reads:
        source = f"(SELECT * FROM audit WHERE substr(operation, 1, {len(OPERATOR_READ_PREFIX)}) <> '{OPERATOR_READ_PREFIX}')"
    rows = run(dialect.sql(f"SELECT {AUDIT_COLUMNS} FROM {source} a{where}"), params)
    if not descending(query):
        rows.reverse()
    return _audit_rows(dialect, rows)


def lineage(
    run: Runner,
    dialect: Dialect,
    clearance: int,
    lineage_id: str,
    before: int | None,
    limit: int,
    operator_reads: bool,
) -> Lineage:
    """A page of the audit events naming ``lineage_id``, the console's own reads left out unless asked for.

    Every memories page, version list and record the console shows names the
    lineage ids it shows, so a record's history would be mostly the operator's
    own looking; left out, they are counted instead. The (seq, operation) of
    the events naming the lineage within the clearance are read newest first
    in growing keyset chunks, counting the reads passed, until the page is
    full: the scan goes no further than the page itself (nor past
    ``MAX_COUNTED_READS``), then the page's rows are read by seq.
    """
    limit = clamp(limit)
    if operator_reads:
        events = audit(run, dialect, clearance, before, limit, lineage_id)
        listed = sum(1 for r in events if r.event and r.event.operation.startswith(OPERATOR_READ_PREFIX))
        return Lineage(events, listed, False)
    cut = len(OPERATOR_READ_PREFIX)
    seqs: list[int] = []
    reads, start, size = 0, before, limit + 1
    while len(seqs) < limit:
        query = AuditQuery(clearance, None, lineage_id, None, start, size)
        where, params = audit_sql(query, dialect, substring_first=True)
        assert descending(query)  # newest first
        scanned = run(dialect.sql(f"SELECT a.seq, substr(a.operation, 1, {cut}) FROM audit a{where}"), params)
        others = 0
        for seq, head in scanned:
            if head == OPERATOR_READ_PREFIX:
                reads += 1
                continue
            others += 1
            seqs.append(int(seq))
            if len(seqs) == limit:
                break
        if len(seqs) == limit or len(scanned) < size:
            break  # the page is full, or the log's start is reached
        if reads > MAX_COUNTED_READS:
            # the page goes on past the counted reads: read it alone, without them
            events = audit(run, dialect, clearance, before, limit, lineage_id, operator_reads=False)
            return Lineage(events, MAX_COUNTED_READS, True)
        # the next chunk: as many events as the page still needs at the share of reads seen so far
        needed = limit - len(seqs)
        start, size = int(scanned[-1][0]), min(4096, needed * len(scanned) // max(others, 1) + 1)
    if not seqs:
        return Lineage([], reads, False)
    marks = ", ".join("?" * len(seqs))
    rows = run(
        dialect.sql(f"SELECT {AUDIT_COLUMNS} FROM audit a WHERE a.seq IN ({marks}) ORDER BY a.seq DESC"), seqs
    )
    return Lineage(_audit_rows(dialect, rows), min(reads, MAX_COUNTED_READS), reads > MAX_COUNTED_READS)
