"""Row-level security on the turn tables (migration 4): raw SQL as the application role sees and writes
only what the lattice allows — own agent, levels <= the bound taint, inserts at exactly the taint."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from pg_support import open_pg, schema_of, superuser
from psycopg import errors
from test_pg_rls import bound, connect

import stratamem as sm
from stratamem.turn import CostLedger, Message, Transcript

PUB, CONF = int(sm.Level.PUBLIC), int(sm.Level.CONFIDENTIAL)


@pytest.fixture(scope="module")
def world():
    store = open_pg()
    session = store.session("a")
    Transcript(session).append(Message("user", "public words"))
    session.escalate(sm.Level.CONFIDENTIAL, "read payroll")
    Transcript(session).append(Message("assistant", "confidential salary figures"))
    CostLedger(session).record("m", 1, 1, cost_usd=2)
    peer = store.session("b")
    Transcript(peer).append(Message("user", "agent b's chat"))
    login = f"probe_{uuid.uuid4().hex[:8]}"
    with superuser() as su:
        su.execute(f"CREATE ROLE {login} LOGIN NOINHERIT IN ROLE stratamem_app")
    yield store, session, login
    store.close()


def test_public_binding_reads_only_public_rows_of_its_own_agent(world):
    store, _, login = world
    with connect(login, schema_of(store)) as conn:
        bound(conn, PUB, ["a", "b"], "a")  # even with b as a peer: peers share memories, not chats
        assert conn.execute("SELECT content FROM turn_messages").fetchall() == [("public words",)]
        assert conn.execute("SELECT count(*) FROM turn_usage").fetchone()[0] == 0
        conn.execute("ROLLBACK")


def test_writes_below_the_taint_and_deletes_are_refused(world):
    store, session, login = world
    with connect(login, schema_of(store)) as conn:
        bound(conn, CONF, ["a"], "a")
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO turn_messages (session_id, agent_id, level, role, content, tool_calls, "
                "created_us) VALUES (%s, 'a', %s, 'user', 'write down', '[]', 0)",
                (session.id, PUB),
            )
        conn.execute("ROLLBACK")
        bound(conn, CONF, ["a"], "a")
        assert conn.execute("DELETE FROM turn_messages").rowcount == 0
        with pytest.raises(psycopg.Error):
            conn.execute("UPDATE turn_messages SET content = 'x'")
        conn.execute("ROLLBACK")
