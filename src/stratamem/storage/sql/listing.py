"""The SQL of a paged listing, and of the operator's export of every live memory, shared by both backends.

A backend supplies its visible-view predicate and its ``Dialect`` (named
placeholders, tag test, key collation); this module adds the filters, the cursor
position and ``LIMIT`` so paging happens in the database, never by loading
every memory into Python. See ``stratamem.paging`` for the order and why the
cursor is noninterference-safe.

Shape of the statement: one branch per agent the session reads (own agent,
then peers in order), each ordered by key and limited on its own, so every
branch walks the ``(agent_id, key, level)`` index and a page costs about its
own size however large the store; the branches are joined with ``UNION ALL``
and ordered by (agent rank, key) with the page's ``LIMIT``. Agents before the
cursor's are skipped; the cursor's agent starts after its key.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...audit import operator_draft
from ...models import Memory, situated
from ...paging import ListQuery, after_position
from .dialect import Dialect
from .rows import MEMORY_COLUMNS, MEMORY_WIDTH, stored_memory, to_us

if TYPE_CHECKING:
    from ..protocol import TransactionSeam as Seam
    from ..transaction import Tx

D_COLUMNS = ", ".join("d." + c for c in MEMORY_COLUMNS.split(", "))


def _filters(dialect: Dialect, query: ListQuery) -> tuple[list[str], dict[str, object]]:
    ph = dialect.named
    conditions: list[str] = []
    params: dict[str, object] = {}
    for name, value, condition in (
        ("f_tag", query.tag, dialect.has_tag),
        ("f_without", query.without_tag, "NOT " + dialect.has_tag),
        ("f_category", query.category, "d.category = {p}"),
        ("f_without_category", query.without_category, "d.category <> {p}"),
        ("f_saved_by", query.saved_by, "d.session_id = {p}"),
        ("f_since", query.since_us, "d.created_us >= {p}"),
        ("f_until", query.until_us, "d.created_us <= {p}"),
        # a row from before the field has no occurred time: it happened when it was created
        ("f_occurred_since", query.occurred_since_us, "coalesce(d.occurred_us, d.created_us) >= {p}"),
        ("f_occurred_until", query.occurred_until_us, "coalesce(d.occurred_us, d.created_us) <= {p}"),
    ):
        if value is not None:
            params[name] = value
            conditions.append(condition.format(p=ph(name)))
    return conditions, params


def listing_sql(
    dialect: Dialect, query: ListQuery, agents: tuple[str, ...], visible: str
) -> tuple[str, dict[str, object]]:
    """The whole statement for ``query`` and its parameters (to merge with the scope's).

    ``visible`` is the backend's visible-view predicate on rows aliased ``d``.
    The limit asks for one row more than the page, so the caller knows
    whether more exist. Rows come back in ``MEMORY_COLUMNS`` order.
    """
    ph = dialect.named
    conditions, params = _filters(dialect, query)
    first, after_key = (0, None) if query.after is None else after_position(query.after, agents)
    limit = ""
    if query.limit is not None:
        params["f_limit"] = query.limit + 1
        limit = f" LIMIT {ph('f_limit')}"
    key = "d.key" + dialect.collate
    inner_order = f"d.updated_us DESC, {key}" if query.newest_first else key
    branches = []
    for rank in range(first, len(agents)):
        params[f"l_agent{rank}"] = agents[rank]
        where = [f"({visible})", f"d.agent_id = {ph(f'l_agent{rank}')}", *conditions]
        if rank == first and after_key is not None:
            params["c_key"] = after_key
            where.append(f"{key} > {ph('c_key')}")
        branches.append(
            f"SELECT * FROM (SELECT {D_COLUMNS}, {rank} AS l_rank FROM memories d "
            f"WHERE {' AND '.join(where)} ORDER BY {inner_order}{limit}) AS b{rank}"
        )
    out_key = "key" + dialect.collate
    outer_order = f"updated_us DESC, {out_key}, l_rank" if query.newest_first else f"l_rank, {out_key}"
    sql = f"SELECT {MEMORY_COLUMNS} FROM ({' UNION ALL '.join(branches)}) AS u ORDER BY {outer_order}{limit}"
    return sql, params


def export_body(tx: Tx[Any], agent_id: str | None) -> list[Memory]:
    """Every live, unexpired memory (of one agent, or all) in (agent, key, level) order: an operator read.

    Each comes with the context stored beside it (``SituatedMemory``), so an export loses nothing."""
    ph = tx.dialect.positional
    sql = (
        f"SELECT {MEMORY_COLUMNS}, context FROM memories WHERE deleted_us IS NULL "
        f"AND (expires_us IS NULL OR expires_us > {ph})"
    )
    params: list[object] = [to_us(tx.now)]
    if agent_id is not None:
        sql += f" AND agent_id = {ph}"
        params.append(agent_id)
    rows = tx.conn.execute(sql + " ORDER BY agent_id, key, level", params).fetchall()
    return [situated(stored_memory(r, tx.dialect.decode), r[MEMORY_WIDTH]) for r in rows]


def exported(seam: Seam, agent_id: str | None, now: datetime) -> Iterator[Memory]:
    """``export_body`` in one read-only operator snapshot, then the ``export`` event (the count, no content)."""
    found = seam.operator(now, lambda tx: export_body(tx, agent_id), read_only=True)
    seam.append_audit(operator_draft("export", agent_id=agent_id, detail={"count": len(found)}), now)
    return iter(found)
