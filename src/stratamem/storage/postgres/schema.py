"""PostgreSQL schema: applying its versions, the application role, and why row-level security holds.

The versions themselves, in order, are ``migrations.MIGRATIONS``. They are
applied under ``pg_advisory_xact_lock`` so any number of processes may open
the same store at once: the first applies what is missing, the others wait
for its commit, re-read the version and find nothing to do. Each version is
one transaction, so a failed migration leaves the previous version intact.

Defence in depth. The backend never trusts its own WHERE clauses alone: every
transaction it runs is bound to a session through transaction-local settings
(``stratamem.taint``, ``stratamem.agents``, ``stratamem.agent``; see
``pg_connect.bind``) and runs as the application role (default
``stratamem_app``: NOLOGIN, no BYPASSRLS, not an owner). Policies on
``memories``, ``postings``, ``part_stats``, ``term_stats`` and ``audit`` then let that role
read only rows of the session's agents whose label is <= the taint (level not
above it, no compartment outside it: ``label_policies``), and write only rows
of the own agent at exactly the taint's label (WITH CHECK), so a bug in a
query can never return a row above or beside the taint, or write one below it. Operator paths (purge,
export, import, restore, migrate, audit verify) set ``stratamem.operator``,
which the policies honour. The settings are ordinary custom settings, so this
guards against mistakes in our SQL, not against someone who can run arbitrary
SQL as the application role — keep that role's credentials with the runtime.

Two pieces of derived state are maintained by trusted code rather than by the
session's role: the ``shadowable`` flag of lower versions (a SECURITY DEFINER
function owned by the schema owner, so a save at CONFIDENTIAL can mark the
PUBLIC version of the same key without being granted a write below its taint)
and the audit head (a one-row table every append locks, which keeps the hash
chain linear). A trigger refuses to lower a session's taint.

On a managed PostgreSQL (no superuser) run the first ``stratamem`` open (or
``migrate_schema``) as the role that should own the schema; it needs CREATEROLE
to create the application role, or an administrator creates it beforehand::

    CREATE ROLE stratamem_app NOLOGIN NOBYPASSRLS;   -- once, by an administrator
    GRANT stratamem_app TO stratamem_owner;          -- lets the owner's connections SET ROLE
    GRANT stratamem_app TO stratamem_runtime;        -- optional: a separate login for agents
"""

from __future__ import annotations

import re

import psycopg
from psycopg import sql

from ...errors import StorageError
from ..sql.rows import one_row
from .migrations import LATEST, MIGRATIONS, Migration

DEFAULT_SCHEMA = "stratamem"
DEFAULT_APP_ROLE = "stratamem_app"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

__all__ = ["LATEST", "MIGRATIONS", "Migration", "check_identifier", "has_migration", "migrate_schema"]


def has_migration(name: str) -> bool:
    """Whether the stores this code opens are migrated through the step ``name`` (tests may hold them older)."""
    return any(step.name == name for step in MIGRATIONS)


def check_identifier(name: str, what: str) -> str:
    if not _IDENT.match(name):
        raise StorageError(f"invalid PostgreSQL {what} {name!r}: use letters, digits and underscores")
    return name


def _ensure_app_role(conn: psycopg.Connection, app_role: str) -> None:
    """Create the application role if we may, and let the migrating user SET ROLE to it."""
    conn.execute(
        sql.SQL("""DO $$ BEGIN
              IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = {name}) THEN
                CREATE ROLE {role} NOLOGIN NOBYPASSRLS NOSUPERUSER NOCREATEDB NOCREATEROLE;
              END IF;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
            END $$""").format(name=sql.Literal(app_role), role=sql.Identifier(app_role))
    )
    conn.execute(
        sql.SQL("""DO $$ BEGIN
              IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
                 AND NOT pg_has_role(current_user, {name}, 'MEMBER') THEN
                EXECUTE format('GRANT %I TO %I', {name}, current_user);
              END IF;
            EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation THEN
              RAISE NOTICE 'stratamem: cannot grant % to %; an administrator must', {name}, current_user;
            END $$""").format(name=sql.Literal(app_role))
    )


def _version(conn: psycopg.Connection, schema: str) -> int:
    exists = one_row(conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f'"{schema}".meta',)).fetchone())[0]
    if not exists:
        return 0
    row = conn.execute(
        sql.SQL("SELECT value FROM {}.meta WHERE name = 'schema_version'").format(sql.Identifier(schema))
    ).fetchone()
    return int(row[0]) if row else 0


def migrate_schema(conn: psycopg.Connection, schema: str, app_role: str) -> int:
    """Bring ``schema`` to the latest version; returns the version found before. Idempotent.

    ``conn`` must be in autocommit mode (each version is its own transaction).
    """
    check_identifier(schema, "schema name")
    check_identifier(app_role, "role name")
    ident = sql.Identifier(schema)
    with conn.transaction():
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"stratamem.migrate:{schema}",)
        )
        before = _version(conn, schema)
        if before > LATEST:
            raise StorageError(
                f"the store's schema is version {before}, newer than this stratamem ({LATEST}); upgrade stratamem"
            )
        if before == LATEST:
            return before
        present = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
        if not present:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(ident))
        conn.execute(sql.SQL("SET LOCAL search_path TO {}, pg_temp").format(ident))
        _ensure_app_role(conn, app_role)
        fields = {"schema": ident, "app": sql.Identifier(app_role), "app_literal": sql.Literal(app_role)}
        for version, _, statements in MIGRATIONS:
            if version <= before:
                continue
            # One round trip per version: the statements carry no parameters.
            script = sql.SQL(";\n").join(
                sql.SQL(statement).format(**fields)
                if any(f"{{{name}}}" in statement for name in fields)
                else sql.SQL(statement)
                for statement in statements
            )
            conn.execute(script)
            conn.execute(
                "INSERT INTO meta (name, value) VALUES ('schema_version', %s) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (str(version),),
            )
        return before
