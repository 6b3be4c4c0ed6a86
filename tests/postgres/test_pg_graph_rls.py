"""Row-level security on the graph's tables (migration 3), spoken to in raw SQL as the application role."""

from __future__ import annotations

import uuid

import pytest
from pg_support import open_pg, schema_of, superuser
from psycopg import errors
from test_pg_rls import bound, connect

import stratamem as sm

PUB, CONF = int(sm.Level.PUBLIC), int(sm.Level.CONFIDENTIAL)
TABLES = ("graph_nodes", "graph_observations", "graph_edges", "graph_postings", "graph_part_stats")


@pytest.fixture(scope="module")
def world():
    store = open_pg()
    a = store.session("a")
    a.graph.capture("Pub", "x", "public node", observations=["public fact"])
    conf = store.session("a")
    conf.escalate(sm.Level.CONFIDENTIAL, "test")
    conf.graph.capture("Conf", "x", "secret node", observations=["secret fact"])
    conf.graph.relate("Pub", "Conf", "hides")
    store.session("b").graph.capture("Other", "x")
    login = f"probe_{uuid.uuid4().hex[:8]}"
    with superuser() as su:
        su.execute(f"CREATE ROLE {login} LOGIN NOINHERIT IN ROLE stratamem_app")
    yield store, login
    store.close()


def test_reads_stop_at_the_taint_and_the_agents(world):
    store, login = world
    with connect(login, schema_of(store)) as conn:
        bound(conn, PUB, ["a"], "a")
        for table in TABLES:
            levels = {r[0] for r in conn.execute(f"SELECT level FROM {table}")}
            agents = {r[0] for r in conn.execute(f"SELECT agent_id FROM {table}")}
            assert levels <= {PUB} and agents <= {"a"}, table
        assert [r[0] for r in conn.execute("SELECT name FROM graph_nodes")] == ["Pub"]
        conn.execute("ROLLBACK")


def test_writes_below_the_taint_or_for_others_are_refused(world):
    store, login = world
    with connect(login, schema_of(store)) as conn:
        bound(conn, CONF, ["a"], "a")
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO graph_nodes (id, agent_id, name, level, type, content, tags, created_us, "
                "updated_us) VALUES ('x', 'a', 'Low', %s, 't', '', '[]', 0, 0)",
                (PUB,),
            )
        conn.execute("ROLLBACK")
        bound(conn, CONF, ["a"], "a")
        assert (
            conn.execute("UPDATE graph_nodes SET content = 'changed' WHERE level = %s", (PUB,)).rowcount == 0
        )
        assert conn.execute("DELETE FROM graph_edges").rowcount == 0
        conn.execute("ROLLBACK")
