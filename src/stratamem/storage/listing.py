"""The SQL of a paged listing, shared by both backends.

A backend supplies its visible-view predicate and its dialect (placeholder
style, agent-rank expression, tag test, key collation); this module adds the
filters, the cursor position and ``LIMIT`` so paging happens in the database,
never by loading every memory into Python. See ``stratamem.paging`` for the
order and why the cursor is noninterference-safe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..paging import ListQuery, after_position


@dataclass(frozen=True, slots=True)
class Dialect:
    placeholder: Callable[[str], str]  # name -> ":name" or "%(name)s"
    has_tag: str  # a predicate with one "{tag}" placeholder slot
    key: str  # the key column in code point order
    rank_base: int  # what the agent-rank expression gives the session's own agent (0 or 1)


SQLITE = Dialect(lambda n: f":{n}", "EXISTS (SELECT 1 FROM json_each(d.tags) WHERE value = {tag})", "d.key", 0)
POSTGRES = Dialect(lambda n: f"%({n})s", "d.tags::jsonb @> jsonb_build_array({tag}::text)", 'd.key COLLATE "C"', 1)


def listing_sql(dialect: Dialect, query: ListQuery, agents: tuple[str, ...], rank: str
                ) -> tuple[str, str, dict[str, object]]:
    """``(extra WHERE conditions, ORDER BY ... LIMIT ..., parameters)`` for ``query``.

    The conditions start with " AND" (or are empty); the limit asks for one
    row more than the page so the caller knows whether more exist.
    """
    ph = dialect.placeholder
    where: list[str] = []
    params: dict[str, object] = {}

    def add(name: str, value: object, condition: str) -> None:
        params[name] = value
        where.append(condition.format(p=ph(name)))

    if query.tag is not None:
        add("f_tag", query.tag, dialect.has_tag.replace("{tag}", "{p}"))
    if query.without_tag is not None:
        add("f_without", query.without_tag, "NOT " + dialect.has_tag.replace("{tag}", "{p}"))
    if query.category is not None:
        add("f_category", query.category, "d.category = {p}")
    if query.saved_by is not None:
        add("f_saved_by", query.saved_by, "d.session_id = {p}")
    if query.since_us is not None:
        add("f_since", query.since_us, "d.created_us >= {p}")
    if query.until_us is not None:
        add("f_until", query.until_us, "d.created_us <= {p}")
    if query.after is not None:
        position, key = after_position(query.after, agents)
        params["c_rank"], params["c_key"] = position + dialect.rank_base, key
        where.append(f"({rank} > {ph('c_rank')} OR ({rank} = {ph('c_rank')} AND {dialect.key} > {ph('c_key')}))")
    if query.newest_first:
        order = f" ORDER BY d.updated_us DESC, {dialect.key}, {rank}"
    else:
        order = f" ORDER BY {rank}, {dialect.key}"
    if query.limit is not None:
        params["f_limit"] = query.limit + 1
        order += f" LIMIT {ph('f_limit')}"
    return "".join(f" AND {c}" for c in where), order, params

