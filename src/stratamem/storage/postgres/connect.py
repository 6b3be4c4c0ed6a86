"""Connections for the PostgreSQL backend: the store URL, the pool, transactions and their binding.

Store URL: any libpq URL plus a few parameters of ours, removed before libpq
sees the rest::

    postgresql://user:secret@db.example.com:5432/app?sslmode=require&schema=stratamem
        &app_role=stratamem_app&pool_min=1&pool_max=10&pool_timeout=30

``schema`` (default ``stratamem``) holds the store's tables, so several stores
can share one database; ``app_role`` is the role without BYPASSRLS every
connection switches to (see ``pg_schema``). Statements are server-side
prepared on first use (``prepare_threshold``, default 0; ``off`` for a pooler
that cannot keep prepared statements). Connections keep session state (the
role and search_path), so a pooler in front must run in session mode.

Every connection runs in autocommit mode and the backend opens transactions
explicitly (``run``), so a transaction is exactly one backend operation; it is
retried from the start when PostgreSQL aborts it for a deadlock or a
serialization failure, which no caller can observe. Connections are not
pinged on checkout (a round trip per operation); one the server has closed
fails on BEGIN, before anything ran, and the operation moves to another.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool

from ...errors import StorageError
from .schema import DEFAULT_APP_ROLE, DEFAULT_SCHEMA, check_identifier

T = TypeVar("T")

_RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure, pg_errors.LockNotAvailable)
_ATTEMPTS = 8


@dataclass(frozen=True, slots=True)
class PgConfig:
    conninfo: str
    schema: str = DEFAULT_SCHEMA
    app_role: str = DEFAULT_APP_ROLE
    pool_min: int = 1
    pool_max: int = 10
    timeout: float = 30.0
    prepare_threshold: int | None = 0


def parse_url(url: str) -> PgConfig:
    """Split a store URL into what libpq understands and the parameters stratamem reads."""
    parts = urlsplit(url)
    ours: dict[str, str] = {}
    rest: list[tuple[str, str]] = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in ("schema", "app_role", "pool_min", "pool_max", "pool_timeout", "prepare_threshold"):
            ours[name] = value
        else:
            rest.append((name, value))
    conninfo = urlunsplit(parts._replace(query=urlencode(rest)))
    try:
        pool_min = int(ours.get("pool_min", 1))
        pool_max = int(ours.get("pool_max", 10))
        timeout = float(ours.get("pool_timeout", 30))
        prepare = ours.get("prepare_threshold", "0")
        prepare_threshold = None if prepare.lower() in ("off", "none", "") else int(prepare)
    except ValueError as exc:
        raise StorageError(f"invalid pool parameter in the store URL: {exc}") from None
    if not 0 <= pool_min <= pool_max or pool_max < 1 or timeout <= 0:
        raise StorageError(
            "pool parameters must satisfy 0 <= pool_min <= pool_max, pool_max >= 1, pool_timeout > 0"
        )
    return PgConfig(
        conninfo=conninfo,
        schema=check_identifier(ours.get("schema", DEFAULT_SCHEMA), "schema name"),
        app_role=check_identifier(ours.get("app_role", DEFAULT_APP_ROLE), "role name"),
        pool_min=pool_min,
        pool_max=pool_max,
        timeout=timeout,
        prepare_threshold=prepare_threshold,
    )


def configure(conn: psycopg.Connection, cfg: PgConfig) -> None:
    """Point a new connection at the store's schema and drop to the application role.

    A connection as superuser, as a BYPASSRLS role or as the tables' owner
    would not be subject to the row-level security policies, so such a
    connection must be able to SET ROLE to the application role, or it is
    refused; any other role already runs under the policies.
    """
    conn.execute(sql.SQL("SET search_path TO {}, pg_temp").format(sql.Identifier(cfg.schema)), prepare=False)
    is_app, bypasses, member = _role_facts(conn, cfg)
    if not is_app and member:
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(cfg.app_role)))
    elif not is_app and bypasses:
        raise StorageError(
            f"the connecting role bypasses row-level security (superuser, BYPASSRLS or owner of schema "
            f"{cfg.schema!r}) and cannot SET ROLE {cfg.app_role}: run `GRANT {cfg.app_role} TO <login role>` "
            f"or connect as a role without those rights"
        )
    if _role_facts(conn, cfg)[1]:
        raise StorageError(f"role {cfg.app_role!r} must not be a superuser, have BYPASSRLS or own the tables")


def _role_facts(conn: psycopg.Connection, cfg: PgConfig) -> tuple[bool, bool, bool]:
    """(current role is the application role, it escapes row-level security, it may SET ROLE to the app role).

    Owners escape RLS, and so does any role that has the owner's privileges
    through membership.
    """
    row = conn.execute(
        """SELECT r.rolname = %(app)s,
                  r.rolsuper OR r.rolbypassrls OR EXISTS (
                      SELECT 1 FROM pg_tables t WHERE t.schemaname = %(schema)s AND t.tablename = 'memories'
                      AND pg_has_role(r.rolname, t.tableowner, 'USAGE')),
                  CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %(app)s)
                       THEN pg_has_role(r.rolname, %(app)s, 'MEMBER') ELSE false END
           FROM pg_roles r WHERE r.rolname = current_user""",
        {"app": cfg.app_role, "schema": cfg.schema},
    ).fetchone()
    assert row is not None
    return row[0], row[1], row[2]


def open_pool(cfg: PgConfig) -> ConnectionPool:
    pool = ConnectionPool(
        cfg.conninfo,
        kwargs={"autocommit": True, "prepare_threshold": cfg.prepare_threshold},
        min_size=cfg.pool_min,
        max_size=cfg.pool_max,
        configure=lambda conn: configure(conn, cfg),
        timeout=cfg.timeout,
        name=f"stratamem:{cfg.schema}",
        num_workers=2,
        open=False,
    )
    pool.open(wait=False)  # the first operation waits (up to the pool timeout) if need be
    return pool


def bind(conn: psycopg.Connection, taint: int, agents: Sequence[str], own_agent: str) -> None:
    """Tie the rest of the transaction to one session's view; the policies read these settings.

    ``taint`` is the session's label as stored (``SessionRecord.taint_code``: level | compartment bits << 2),
    which ``sm_taint()`` returns to the policies.
    """
    conn.execute(
        "SELECT set_config('stratamem.taint', %s, true), set_config('stratamem.agents', %s::text[]::text, true), "
        "set_config('stratamem.agent', %s, true), set_config('stratamem.operator', '', true)",
        (str(int(taint)), list(agents), own_agent),
    )


def bind_operator(conn: psycopg.Connection) -> None:
    """Operator paths (purge, export, import, restore, audit) see and write every row."""
    conn.execute("SELECT set_config('stratamem.operator', 'on', true)")


class _StaleConnection(Exception):
    """BEGIN failed on a pooled connection the server has closed: nothing ran, so the operation may move."""


def run_on(
    conn: psycopg.Connection, body: Callable[[psycopg.Connection], T], *, read_only: bool = False
) -> T:
    """Run ``body`` in one transaction on ``conn`` (rolled back on any exception)."""
    try:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if read_only else "BEGIN")
    except psycopg.OperationalError as exc:
        if conn.broken:
            raise _StaleConnection() from exc
        raise
    try:
        result = body(conn)
        conn.execute("COMMIT")
        return result
    except BaseException:
        if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
            try:
                conn.execute("ROLLBACK")
            except psycopg.Error:
                pass
        raise


def run_autocommit(pool: ConnectionPool, body: Callable[[psycopg.Connection], T]) -> T:
    """Run ``body``'s one statement as its own transaction (one round trip), retried as ``run`` retries.

    In autocommit mode the statement commits before its answer is sent, so
    what ``body`` returns has been committed. A deadlock or serialization
    failure aborted it whole, so it is retried; a connection lost while it
    ran is not (it may have committed): that fails with the error.
    """
    for attempt in range(_ATTEMPTS):
        try:
            with pool.connection() as conn:
                return body(conn)
        except _RETRYABLE:
            if attempt == _ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.001, 0.01) * (attempt + 1))
    raise AssertionError("unreachable")


def run(pool: ConnectionPool, body: Callable[[psycopg.Connection], T], *, read_only: bool = False) -> T:
    """Run ``body`` in one transaction, retried from scratch on deadlock or serialization failure.

    Writers are READ COMMITTED and serialise through locks; read-only
    transactions (operator reads of several statements) are REPEATABLE READ,
    so they see one snapshot.
    """
    for attempt in range(_ATTEMPTS):
        try:
            with pool.connection() as conn:
                return run_on(conn, body, read_only=read_only)
        except _StaleConnection as stale:
            if attempt == _ATTEMPTS - 1:
                raise StorageError(f"the database connection was lost: {stale.__cause__}") from stale
        except _RETRYABLE:
            if attempt == _ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.001, 0.01) * (attempt + 1))
    raise AssertionError("unreachable")
