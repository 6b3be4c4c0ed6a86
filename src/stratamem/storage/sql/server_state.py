"""What one server keeps between requests, in the store so any server behind a load balancer can answer.

Three kinds of entries share one table (``server_state``), each a row keyed by
``(kind, key)`` with the principal it belongs to, a JSON payload and an expiry:

- ``mcp``: a stateful MCP connection's stratamem session (``server/bindings.py``);
- ``console``: an operator console sign-in (``server/console.py``);
- ``idempotency``: the first answer to a REST write sent with an ``Idempotency-Key``
  (``server/idempotency.py``).

``key`` is always a SHA-256 digest made by the caller (``digest``): console ids and
MCP session ids are bearer credentials of a kind, and an idempotency key is scoped by
hashing it with its principal, so nothing in the table can be presented back as a
credential. The rows carry no memory content (an idempotency entry holds an answer the
principal was already given, and expires). The SQL is written once for both SQL engines
and runs as bodies in operator transactions (``storage/server_state.py``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .rows import to_us

if TYPE_CHECKING:
    from ..transaction import Tx

KINDS = ("mcp", "console", "idempotency")


@dataclass(frozen=True, slots=True)
class Entry:
    """One row: whose it is, what it holds (JSON text) and when it stops counting (microseconds)."""

    principal: str
    payload: str
    expires_us: int


def digest(kind: str, *parts: str) -> str:
    """The stored key of an entry: a hash of its parts, unambiguous (each part length-prefixed)."""
    if kind not in KINDS:
        raise ValueError(f"unknown server state kind {kind!r}")
    h = hashlib.sha256(kind.encode())
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def get_body(tx: Tx[Any], kind: str, key: str) -> Entry | None:
    """The entry, if it has not expired at ``tx.now``."""
    d = tx.dialect
    row = tx.conn.execute(
        d.sql(
            "SELECT principal, payload, expires_us FROM server_state "
            "WHERE kind = ? AND key = ? AND expires_us > ?"
        ),
        (kind, key, to_us(tx.now)),
    ).fetchone()
    return None if row is None else Entry(d.text(row[0]), d.text(row[1]), int(row[2]))


def put_body(tx: Tx[Any], kind: str, key: str, entry: Entry, *, replace: bool) -> Entry:
    """Write the entry; ``replace`` False keeps a live one already there. Returns the entry now stored.

    An expired row counts as absent: it is overwritten whatever ``replace`` says.
    """
    d = tx.dialect
    keep_live = "" if replace else " WHERE server_state.expires_us <= ?"
    params: tuple[Any, ...] = (
        kind,
        key,
        d.encode(entry.principal),
        d.encode(entry.payload),
        entry.expires_us,
    )
    tx.conn.execute(
        d.sql(
            "INSERT INTO server_state(kind, key, principal, payload, expires_us) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (kind, key) DO UPDATE SET principal = excluded.principal, "
            f"payload = excluded.payload, expires_us = excluded.expires_us{keep_live}"
        ),
        params if replace else (*params, to_us(tx.now)),
    )
    stored = get_body(tx, kind, key)
    assert stored is not None
    return stored


def drop_body(tx: Tx[Any], kind: str, key: str) -> int:
    sql = tx.dialect.sql("DELETE FROM server_state WHERE kind = ? AND key = ?")
    return int(tx.conn.execute(sql, (kind, key)).rowcount)


def purge_body(tx: Tx[Any]) -> int:
    """Every expired entry removed (a store's ``purge``)."""
    sql = tx.dialect.sql("DELETE FROM server_state WHERE expires_us <= ?")
    return int(tx.conn.execute(sql, (to_us(tx.now),)).rowcount)
