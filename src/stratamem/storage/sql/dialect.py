"""What differs between SQLite and PostgreSQL for the SQL written once for both: one ``Dialect``, two instances.

The shared modules (listing, audit pages, console reads, graph, transcripts)
write their SQL once, with ``?`` for positional parameters or ``:name`` for
named ones, and ask the backend's dialect for the rest: how a placeholder is
spelled, how a tag or a lineage id is tested in the JSON text columns, how
keys compare in code point order, the case-insensitive ``LIKE``, the index
hint for soft-deleted rows, where the audit log's head record is kept, how a
batch of parameter sets is executed, and the NUL-safe text encoding
(PostgreSQL text cannot hold NUL, which the contract allows in content and
other free text). Each backend passes its one instance, ``SQLITE`` or
``POSTGRES``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, overload

_ESC = "\ue000"
_ESCAPED = re.compile(_ESC + "(.)", re.DOTALL)


@overload
def enc(text: str) -> str: ...
@overload
def enc(text: None) -> None: ...
def enc(text: str | None) -> str | None:
    """Text safe for a PostgreSQL text column: NUL escaped, and so is the escape character.

    Reversible, and every string without NUL or U+E000 is left unchanged.
    """
    if text is None or ("\x00" not in text and _ESC not in text):
        return text
    return text.replace(_ESC, _ESC + _ESC).replace("\x00", _ESC + "0")


@overload
def dec(text: str) -> str: ...
@overload
def dec(text: None) -> None: ...
def dec(text: str | None) -> str | None:
    """The stored text back as written (``enc`` reversed)."""
    if text is None or _ESC not in text:
        return text
    return _ESCAPED.sub(lambda m: _ESC if m.group(1) == _ESC else "\x00", text)


def _unchanged(text: str | None) -> str | None:
    return text


@lru_cache(maxsize=512)
def _pyformat(sql: str) -> str:
    """``:name`` parameters as psycopg's ``%(name)s`` (``::type`` casts and ``x:y`` left alone)."""
    return re.sub(r"(?<![:\w]):([A-Za-z_]\w*)", r"%(\1)s", sql)


@dataclass(frozen=True, slots=True)
class Dialect:
    """One SQL engine's spelling of what the shared SQL leaves open.

    Fragments with a ``{p}`` slot take a placeholder (``named(name)`` or
    ``positional``); ``lineage_*`` take theirs as ``{ph}``.
    """

    name: str  # "sqlite" or "postgres"
    positional: str  # a positional parameter: "?" or "%s"
    has_tag: str  # tests that d.tags (JSON text) holds the parameter in {p}
    collate: str  # appended to a key to compare and order it in code point order
    like: str  # case-insensitive LIKE operator
    lineage_has: str  # tests that a.lineage (JSON text) holds the lineage id in {ph}
    lineage_match: str  # the same, a substring test first (the id bound once)
    deleted_hint: str  # makes the planner read soft-deleted rows through their partial index
    # rows above a session are hidden from it (row-level security): graph flag upkeep that must see
    # them runs in a server function instead of in the shared SQL
    row_security: bool
    for_update: (
        str  # locks a row read for the rest of the transaction (SQLite's write transaction already does)
    )
    audit_head: str  # the audit log's head record (newest sequence and hash) as one "seq:hash" text, if any
    decode: Callable[[str | None], str | None] = _unchanged  # stored text back as written
    encode: Callable[[str | None], str | None] = _unchanged  # free text as this engine can store it

    def named(self, name: str) -> str:
        """A named parameter: ``:name`` or psycopg's ``%(name)s``."""
        return f":{name}" if self.name == "sqlite" else f"%({name})s"

    def sql(self, text: str) -> str:
        """``text`` written with ``?`` placeholders, for this engine."""
        return text if self.name == "sqlite" else text.replace("?", self.positional)

    def named_sql(self, text: str) -> str:
        """``text`` written with ``:name`` placeholders, for this engine."""
        return text if self.name == "sqlite" else _pyformat(text)

    def text(self, value: str) -> str:
        """A NOT NULL text column as written (``decode`` maps text to text, None only to None)."""
        decoded = self.decode(value)
        assert decoded is not None
        return decoded

    def inserted_id(self, conn: Any, sql: str, params: Sequence[Any]) -> int:
        """Run one ``INSERT`` (already in this engine's spelling) and return the new row's id."""
        if self.name == "sqlite":
            return int(conn.execute(sql, params).lastrowid)
        row = conn.execute(sql + " RETURNING id", params).fetchone()
        assert row is not None
        return int(row[0])

    def executemany(self, conn: Any, sql: str, seq: Sequence[Any]) -> None:
        """Run ``sql`` (already in this engine's spelling) once per parameter set.

        A psycopg connection has no ``executemany`` of its own: it runs on a cursor.
        """
        if self.name == "sqlite":
            conn.executemany(sql, seq)
        else:
            with conn.cursor() as cur:
                cur.executemany(sql, seq)


SQLITE = Dialect(
    name="sqlite",
    positional="?",
    has_tag="EXISTS (SELECT 1 FROM json_each(d.tags) WHERE value = {p})",
    collate="",
    like="LIKE",
    lineage_has="EXISTS (SELECT 1 FROM json_each(a.lineage) WHERE value = {ph})",
    lineage_match=(
        "EXISTS (SELECT 1 FROM (SELECT {ph} AS v) p WHERE instr(a.lineage, p.v) > 0 "
        "AND EXISTS (SELECT 1 FROM json_each(a.lineage) WHERE value = p.v))"
    ),
    deleted_hint="INDEXED BY memories_deleted",
    row_security=False,
    for_update="",
    audit_head="SELECT value FROM meta WHERE name = 'audit_head'",
)

POSTGRES = Dialect(
    name="postgres",
    positional="%s",
    has_tag="d.tags::jsonb @> jsonb_build_array({p}::text)",
    collate=' COLLATE "C"',
    like="ILIKE",
    lineage_has="a.lineage::jsonb @> jsonb_build_array({ph}::text)",
    lineage_match=(
        "EXISTS (SELECT 1 FROM (SELECT {ph}::text AS v) p WHERE strpos(a.lineage, p.v) > 0 "
        "AND a.lineage::jsonb @> jsonb_build_array(p.v))"
    ),
    deleted_hint="",
    row_security=True,
    for_update="FOR UPDATE",
    audit_head="SELECT seq::text || ':' || hash FROM audit_head WHERE seq > 0",
    decode=dec,
    encode=enc,
)
