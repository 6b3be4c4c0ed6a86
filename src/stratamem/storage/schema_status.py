"""Whether a store's schema is the one this code writes: the readiness probe's "migrations current".

A store is brought to the latest schema when it is opened, so a running
server's store is current unless another process of a newer (or older)
release has changed it since. The probe reads the recorded version through
the operator seam in a read-only snapshot, the same way on every engine.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .protocol import Backend
    from .transaction import Tx


def _expected(engine: str) -> int:
    if engine == "postgres":
        from .postgres.migrations import LATEST as POSTGRES_LATEST

        return POSTGRES_LATEST
    from .sqlite.schema import LATEST as SQLITE_LATEST

    return SQLITE_LATEST


def _recorded_body(tx: Tx[Any]) -> tuple[int, int]:
    row = tx.conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
    recorded = int(row[0]) if row and str(row[0]).isdigit() else 0
    return recorded, _expected(tx.dialect.name)


def schema_versions(backend: Backend) -> tuple[int, int]:
    """(the version the store records, the version this code expects) of ``backend``'s engine."""
    return backend.transactions.operator(datetime.now(UTC), _recorded_body, read_only=True)


__all__ = ["schema_versions"]
