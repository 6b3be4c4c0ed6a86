"""Who may read which audit events, and one page of them: the rule every audit read path applies.

An event is visible to a reader when

* its taint's label is within the reader's clearance label (``stratamem.labels``: level not above,
  every compartment among the clearance's) — an operator event (one with no session: purge, export,
  import, migrate, session limits) counts as RESTRICTED whatever level an older store recorded it at,
  because it covers every level, with the compartments it was recorded under (none but for a console
  opened at a label, whose reads name that label's records): a reader cleared for RESTRICTED reads the
  operator's acts, and one cleared for RESTRICTED+HR also the console's reads at HR; and
* for a principal (``owner`` set), it belongs to a session that principal
  created. A principal thus sees only what it could have observed itself: not
  the peer reads of another token of the same agent, not operator actions.
  Operators (``owner`` is ``None``: the library, the CLI, operator tokens) see
  every session's events.

Both backends build their WHERE clause here, so the rule is written once; ``events_body`` is
the read itself, run by ``storage/audit_store.py`` in a read-only operator snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import ValidationError
from ...labels import visible_args, visible_sql
from ...levels import Level
from ...models import AuditEvent
from .dialect import Dialect
from .rows import AUDIT_COLUMNS, stored_event

if TYPE_CHECKING:
    from ..transaction import Tx

MAX_AUDIT_PAGE = 1000


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """A reader (clearance, and the principal it is unless an operator) and a page.

    ``clearance`` is a label as storage keeps it (``stratamem.labels``): a Level, or a level with
    compartment bits (``Store`` encodes names through its registry); a level's name is parsed.

    ``after``: only events with a greater sequence, oldest first (cursor
    paging forward). Without ``after``, ``limit`` picks the newest events
    (``before`` pages backwards). Events always come back oldest first.
    """

    clearance: int = Level.RESTRICTED
    owner: str | None = None
    lineage_id: str | None = None
    after: int | None = None
    before: int | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        clearance = self.clearance
        if isinstance(clearance, str) or not isinstance(clearance, int) or isinstance(clearance, bool):
            clearance = Level.parse(clearance)
        elif clearance < 0:
            raise ValidationError("clearance must be a level or a label's code")
        object.__setattr__(self, "clearance", clearance)
        for name in ("after", "before", "limit"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValidationError(f"{name} must be a non-negative integer")
        if self.lineage_id is not None and not isinstance(self.lineage_id, str):
            raise ValidationError("lineage must be a string")
        if self.owner is not None and not isinstance(self.owner, str):
            raise ValidationError("owner must be a string")


def audit_sql(
    query: AuditQuery, dialect: Dialect, *, substring_first: bool = False
) -> tuple[str, list[object]]:
    """``WHERE ... ORDER BY ... [LIMIT n]`` over ``audit a`` (and ``sessions``) in ``dialect``'s placeholders.

    A lineage id is tested with ``dialect.lineage_has``, or with
    ``lineage_match`` (a substring test first) when ``substring_first``.
    The result is in sequence order the caller must reverse when descending
    (see :func:`descending`).
    """
    ph = dialect.positional
    # an operator event: RESTRICTED, with the compartments it was recorded under (a console read at a label)
    label = f"(CASE WHEN a.session_id IS NULL THEN (a.taint | {int(Level.RESTRICTED)}) ELSE a.taint END)"
    clauses = [visible_sql(label, ph, ph, ph)]
    params: list[object] = [*visible_args(int(query.clearance))]
    if query.owner is not None:
        clauses.append(f"a.session_id IN (SELECT s.id FROM sessions s WHERE s.owner = {ph})")
        params.append(query.owner)
    if query.lineage_id is not None:
        lineage = dialect.lineage_match if substring_first else dialect.lineage_has
        clauses.append(lineage.format(ph=ph))
        params.append(query.lineage_id)
    if query.after is not None:
        clauses.append(f"a.seq > {ph}")
        params.append(query.after)
    if query.before is not None:
        clauses.append(f"a.seq < {ph}")
        params.append(query.before)
    sql = " WHERE " + " AND ".join(clauses) + f" ORDER BY a.seq {'DESC' if descending(query) else 'ASC'}"
    if query.limit is not None:
        sql += f" LIMIT {int(query.limit)}"
    return sql, params


def descending(query: AuditQuery) -> bool:
    """Whether the page is taken from the newest end (then the rows are reversed before returning)."""
    return query.after is None and query.limit is not None


def events_body(tx: Tx[Any], query: AuditQuery) -> list[AuditEvent]:
    """The events ``query``'s reader may see, oldest first (a body of a read-only operator snapshot)."""
    where, params = audit_sql(query, tx.dialect)
    rows = tx.conn.execute(f"SELECT {AUDIT_COLUMNS} FROM audit a" + where, params).fetchall()
    events = [stored_event(r, tx.dialect.decode) for r in rows]
    return events[::-1] if descending(query) else events
