"""Defence in depth: PostgreSQL itself enforces the lattice, whatever SQL the application role runs.

These tests bypass stratamem entirely and speak raw SQL as a login role that is only a member of
the application role, bound (as every backend transaction is) to one session's taint and agents.
"""

from __future__ import annotations

import uuid

import pg_server
import psycopg
import pytest
from pg_support import open_pg, schema_of, superuser
from psycopg import errors

import stratamem as sm

PUB, CONF = int(sm.Level.PUBLIC), int(sm.Level.CONFIDENTIAL)


@pytest.fixture(scope="module")
def world():
    """A store holding PUBLIC and CONFIDENTIAL memories of agent a, and memories of agent b."""
    store = open_pg()
    a = store.session("a")
    a.save("plans", "public plans for the picnic", tags=["t"])
    conf = store.session("a")
    conf.escalate(sm.Level.CONFIDENTIAL, "read payroll")
    conf.save("payroll", "confidential salary figures")
    conf.save("plans", "confidential plans: the merger")
    b = store.session("b")
    b.save("other", "agent b's own note")
    login = f"probe_{uuid.uuid4().hex[:8]}"
    with superuser() as su:
        su.execute(f"CREATE ROLE {login} LOGIN NOINHERIT IN ROLE stratamem_app")
    yield store, conf, login
    store.close()


def connect(login: str, schema: str) -> psycopg.Connection:
    url = pg_server.base_url().replace("postgres:@", f"{login}:@", 1)
    conn = psycopg.connect(url, autocommit=True)
    conn.execute(f"SET ROLE stratamem_app; SET search_path TO {schema}")
    return conn


def bound(conn: psycopg.Connection, taint: int, agents: list[str], agent: str) -> None:
    """What the backend does at the start of every session transaction."""
    conn.execute("BEGIN")
    conn.execute(
        "SELECT set_config('stratamem.taint', %s, true), set_config('stratamem.agents', %s::text[]::text, "
        "true), set_config('stratamem.agent', %s, true)",
        (str(taint), agents, agent),
    )


def test_the_backend_runs_as_the_application_role(world):
    store, _, _ = world
    with store.backend._pool.connection() as conn:
        user, bypass = conn.execute(
            "SELECT current_user, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    assert (user, bypass) == ("stratamem_app", False)


def test_public_binding_sees_nothing_above_it_in_any_table(world):
    store, _, login = world
    with connect(login, schema_of(store)) as conn:
        bound(conn, PUB, ["a"], "a")
        rows = conn.execute("SELECT agent_id, key, level, content FROM memories").fetchall()
        assert rows == [("a", "plans", PUB, "public plans for the picnic")]
        assert (
            conn.execute("SELECT count(*) FROM memories WHERE content LIKE '%%confidential%%'").fetchone()[0]
            == 0
        )
        assert {r[0] for r in conn.execute("SELECT level FROM postings")} == {PUB}
        assert {r[0] for r in conn.execute("SELECT agent_id FROM postings")} == {"a"}
        assert (
            conn.execute("SELECT count(*) FROM postings WHERE term IN ('salari', 'merger')").fetchone()[0]
            == 0
        )
        assert conn.execute("SELECT agent_id, level FROM part_stats").fetchall() == [("a", PUB)]
        assert {tuple(r) for r in conn.execute("SELECT DISTINCT agent_id, level FROM term_stats")} == {
            ("a", PUB)
        }
        assert (
            conn.execute("SELECT count(*) FROM term_stats WHERE term IN ('salari', 'merger')").fetchone()[0]
            == 0
        )
        assert {tuple(r) for r in conn.execute("SELECT DISTINCT agent_id, taint FROM audit")} == {("a", PUB)}
        conn.execute("ROLLBACK")


def test_unbound_transactions_see_nothing(world):
    store, _, login = world
    with connect(login, schema_of(store)) as conn:
        for table in ("memories", "postings", "part_stats", "term_stats", "audit"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_confidential_binding_cannot_write_down(world):
    store, _, login = world
    with connect(login, schema_of(store)) as conn:
        bound(conn, CONF, ["a"], "a")
        assert conn.execute("SELECT count(*) FROM memories WHERE level = %s", (CONF,)).fetchone()[0] == 2
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "INSERT INTO memories (agent_id, key, level, content, tags, category, created_us, updated_us, "
                "lineage_id) VALUES ('a', 'leak', %s, 'confidential salary figures', '[]', 'core', 0, 0, 'x')",
                (PUB,),
            )
        conn.execute("ROLLBACK")

        bound(conn, CONF, ["a"], "a")
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):  # declassify own row
            conn.execute("UPDATE memories SET level = %s WHERE key = 'payroll'", (PUB,))
        conn.execute("ROLLBACK")

        bound(conn, CONF, ["a"], "a")
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):  # copy content down
            conn.execute(
                "INSERT INTO postings (term, agent_id, level, memory_id, tf, length) "
                "VALUES ('salari', 'a', %s, 1, 1, 1)",
                (PUB,),
            )
        conn.execute("ROLLBACK")

        bound(conn, CONF, ["a"], "a")
        # Rows below the taint are readable but not writable: the update matches nothing.
        assert (
            conn.execute("UPDATE memories SET content = 'overwritten' WHERE level = %s", (PUB,)).rowcount == 0
        )
        assert conn.execute("DELETE FROM memories").rowcount == 0  # hard deletes are operator-only
        conn.execute("ROLLBACK")


def test_writes_are_confined_to_the_own_agent(world):
    store, _, login = world
    with connect(login, schema_of(store)) as conn:
        bound(conn, PUB, ["a", "b"], "a")  # b is a peer: readable, never writable
        assert {r[0] for r in conn.execute("SELECT agent_id FROM memories")} == {"a", "b"}
        assert conn.execute("UPDATE memories SET content = 'x' WHERE agent_id = 'b'").rowcount == 0
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO memories (agent_id, key, level, content, tags, category, created_us, "
                "updated_us, lineage_id) VALUES ('b', 'k', 0, 'c', '[]', 'core', 0, 0, 'x')"
            )
        conn.execute("ROLLBACK")


def test_audit_is_append_only_and_taint_never_lowers(world):
    store, conf, login = world
    with connect(login, schema_of(store)) as conn:
        bound(conn, CONF, ["a"], "a")
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("UPDATE audit SET outcome = 'ok'")
        conn.execute("ROLLBACK")
        bound(conn, CONF, ["a"], "a")
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("DELETE FROM audit")
        conn.execute("ROLLBACK")
        bound(conn, CONF, ["a"], "a")
        with pytest.raises(errors.CheckViolation, match="never goes down"):
            conn.execute("UPDATE sessions SET taint = %s WHERE id = %s", (PUB, conf.id))
        conn.execute("ROLLBACK")
    assert conf.taint == sm.Level.CONFIDENTIAL
    assert store.verify_audit() is None


def test_operator_setting_opens_everything(world):
    store, _, login = world
    with connect(login, schema_of(store)) as conn:
        conn.execute("BEGIN")
        conn.execute("SELECT set_config('stratamem.operator', 'on', true)")
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 4
        conn.execute("ROLLBACK")


def test_a_role_that_bypasses_rls_is_refused():
    login = f"bypass_{uuid.uuid4().hex[:8]}"
    with superuser() as su:
        su.execute(f"CREATE ROLE {login} LOGIN BYPASSRLS")
        su.execute(f"GRANT CREATE ON DATABASE postgres TO {login}")
    url = pg_server.fresh_url(prefix="bypass").replace("postgres:@", f"{login}:@", 1)  # it creates the schema
    with pytest.raises(sm.StorageError, match="bypasses row-level security"):
        sm.open_store(url)


def test_a_plain_member_login_works_through_the_application_role():
    store = open_pg()
    store.session("a").save("k", "v")
    login = f"runtime_{uuid.uuid4().hex[:8]}"
    with superuser() as su:
        su.execute(f"CREATE ROLE {login} LOGIN IN ROLE stratamem_app")
    url = pg_server.with_params(
        pg_server.base_url().replace("postgres:@", f"{login}:@", 1), schema=schema_of(store)
    )
    with sm.open_store(url) as runtime:
        assert runtime.session("a").get("k").content == "v"
        with runtime.backend._pool.connection() as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == "stratamem_app"
    store.close()
