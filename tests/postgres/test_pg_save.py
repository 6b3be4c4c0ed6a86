"""A save on PostgreSQL is one statement (``sm_save``, migration 8): same rows, same chain, same security.

The conformance suite checks what a save returns and what searches see; these tests check what only
the server-side function can get wrong: one round trip, invoker rights under row-level security, the
audit hash computed in SQL for hostile strings, derived index state equal to a rebuild, versions
written before their terms were recorded, and a failure inside the statement leaving nothing.
"""

from __future__ import annotations

import threading
import uuid

import pg_server
import psycopg
import pytest
from pg_support import open_pg, schema_of, security_definer, superuser

import stratamem as sm
from stratamem.storage import audit_store
from stratamem.storage.postgres import index
from stratamem.storage.postgres.connect import bind_operator, run

DERIVED = {
    "postings": "SELECT term, agent_id, level, memory_id, tf, length FROM {s}.postings",
    "term_stats": "SELECT term, agent_id, level, df FROM {s}.term_stats WHERE df <> 0",
    "part_stats": "SELECT agent_id, level, n, total_len FROM {s}.part_stats WHERE n <> 0 OR total_len <> 0",
    "flags": "SELECT id, shadowable, length, terms FROM {s}.memories WHERE deleted_us IS NULL",
}


def derived(schema: str) -> dict[str, set[tuple]]:
    with superuser() as su:
        return {name: set(su.execute(sql.format(s=schema))) for name, sql in DERIVED.items()}


def rebuilt(store: sm.Store) -> dict[str, set[tuple]]:
    """The derived state as a full reindex computes it from the versions (then rolled back)."""

    class Undo(Exception):
        pass

    out: dict[str, set[tuple]] = {}

    def body(conn: psycopg.Connection) -> None:
        bind_operator(conn)
        index.reindex(conn, store.analyzer)
        for name, sql in DERIVED.items():
            out[name] = set(conn.execute(sql.format(s=schema_of(store))))
        raise Undo

    with pytest.raises(Undo):
        run(store.backend._pool, body)
    return out


def test_a_save_is_one_statement(monkeypatch):
    store = open_pg()
    s = store.session("a")
    s.save("warm", "the pool and the prepared statement are ready")
    sent: list[str] = []
    main = threading.current_thread()
    real = psycopg.Connection.execute

    def counting(self, query, *args, **kwargs):
        if threading.current_thread() is main:  # not the suite's schema-preparing thread
            sent.append(str(query)[:40])
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", counting)
    s.save("k", "one round trip")
    s.save("k", "one round trip, replacing the version")
    s.save_many([{"key": f"b{i}", "content": f"batch item {i}"} for i in range(50)])
    assert len(sent) == 3 and all("sm_save" in q for q in sent), sent
    monkeypatch.undo()
    assert store.verify_audit() is None
    store.close()


def test_the_function_runs_with_the_callers_rights_under_row_level_security():
    store = open_pg()
    s = store.session("a")
    s.save("before", "written while the policies allow it")
    schema = schema_of(store)
    assert not security_definer(schema, "sm_save")
    with superuser() as su:
        # The policy, not the function, decides: a policy that admits no row stops the function's write.
        su.execute(f"ALTER POLICY memories_insert ON {schema}.memories WITH CHECK (false)")
    try:
        with pytest.raises(sm.errors.StorageError, match="row-level security"):
            s.save("after", "refused by the policy the function runs under")
    finally:
        with superuser() as su:
            su.execute(f"SET search_path TO {schema}")
            su.execute(
                f"ALTER POLICY memories_insert ON {schema}.memories WITH CHECK "
                "((SELECT sm_operator()) OR (level = (SELECT sm_taint()) AND agent_id = (SELECT sm_agent())))"
            )
    assert [m.key for m in s.list()] == ["before"] and store.verify_audit() is None
    # A login that is not the application role has no rights on the tables: the function gives it none.
    login = f"outsider_{uuid.uuid4().hex[:8]}"
    with superuser() as su:
        su.execute(f"CREATE ROLE {login} LOGIN")
        su.execute(f"GRANT USAGE ON SCHEMA {schema} TO {login}")
    url = pg_server.base_url().replace("postgres:@", f"{login}:@", 1)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "SELECT * FROM sm_save(%s, %s, 1, '\"t\"', 1, 1, ARRAY['x'], ARRAY['y'], ARRAY['[]'], "
                "ARRAY['core'], ARRAY[NULL]::bigint[], ARRAY['l'], ARRAY[1], ARRAY['y'], ARRAY['1'], ARRAY['x'], "
                "ARRAY[1]::bigint[], ARRAY[NULL]::text[])",
                (s.id, f'"{s.id}"'),
            )
    store.close()


HOSTILE_KEYS = [
    'quote " and backslash \\ in a key',
    "caf\u00e9 \u65e5\u672c\u8a9e \U0001f600 emoji",
    "homoglyph \u0430\u0435 and combining e\u0301 \u200b zero width",
    "</script><b>html</b> & 'single'",
    "\ue000 private use, the NUL escape character",
]


def test_the_chain_hashed_in_sql_verifies_for_hostile_strings():
    store = open_pg()
    agent = 'ag"ent\\ \u00e9\U0001f600'
    s = store.session(agent, session_id='sess "\\ \u00fc\U0001f600')
    for key in HOSTILE_KEYS:
        s.save(key, f"content of {key} with NUL \x00, \u2028 and \x7f inside")
    s.save_many([{"key": k, "content": "again " + k} for k in HOSTILE_KEYS + HOSTILE_KEYS[:2]])
    s.escalate(sm.Level.CONFIDENTIAL, "higher")
    s.save(HOSTILE_KEYS[0], "confidential version")
    assert store.verify_audit() is None
    events = [e for e in store.audit_events() if e.operation == "save"]
    assert len(events) == 2 * len(HOSTILE_KEYS) + 3
    assert [e.keys[0] for e in events[len(HOSTILE_KEYS) :][:7]] == HOSTILE_KEYS + HOSTILE_KEYS[:2]
    assert {e.session_id for e in events} == {s.id} and {e.agent_id for e in events} == {agent}
    assert s.get(HOSTILE_KEYS[1]).content == "again " + HOSTILE_KEYS[1]
    assert s.get(HOSTILE_KEYS[4]).content == "again " + HOSTILE_KEYS[4]
    store.close()


def test_index_state_equals_a_rebuild_after_overwrites_expiry_and_levels():
    clock = sm_clock()
    store = open_pg(clock=clock)
    a = store.session("a")
    a.save("k1", "apples pears and plums")
    a.save("k2", "short lived pears", ttl=5)
    a.save("k1", "apples again, no plums")  # same level: updated in place, postings replaced
    a.save_many(
        [
            {"key": "k3", "content": "cherries"},
            {"key": "k3", "content": "cherries twice"},
            {"key": "k4", "content": "x"},
        ]
    )
    clock.advance(10)
    a.save("k2", "pears after the expiry")  # the expired version is retired, a fresh one inserted
    up = store.session("a")
    up.escalate(sm.Level.INTERNAL, "up")
    up.save("k1", "internal apples shadow the public ones")
    a.delete("k4")
    assert derived(schema_of(store)) == rebuilt(store)
    assert [h.memory.key for h in a.search("pears")] == ["k2"]
    assert store.verify_audit() is None
    store.close()


def test_versions_written_before_their_terms_were_recorded_are_replaced_cleanly():
    store = open_pg()
    a = store.session("a")
    a.save("old", "legacy words recorded before migration eight")
    a.save("other", "legacy neighbour")
    schema = schema_of(store)
    with superuser() as su:  # as a store migrated from version 7 with no postings to learn from would be
        su.execute(f"UPDATE {schema}.memories SET terms = NULL WHERE key = 'old'")
    a.save("old", "fresh words only")
    assert derived(schema) == rebuilt(store)
    assert a.search("legacy")[0].memory.key == "other" and len(a.search("legacy")) == 1
    store.close()


def test_migration_8_records_the_terms_of_existing_versions():
    store = open_pg()
    a = store.session("a")
    a.save("k", "words to remember")
    schema = schema_of(store)
    with superuser() as su:
        expected = su.execute(f"SELECT id, terms FROM {schema}.memories").fetchall()
        su.execute(f"UPDATE {schema}.memories SET terms = NULL")
        su.execute(f"UPDATE {schema}.meta SET value = '7' WHERE name = 'schema_version'")
        from stratamem.storage.postgres import schema as pg_schema

        assert pg_schema.migrate_schema(su, schema, "stratamem_app") == 7
        got = su.execute(f"SELECT id, terms FROM {schema}.memories").fetchall()
    assert [(i, set(t.split())) for i, t in got] == [(i, set(t.split())) for i, t in expected]
    store.close()


def test_a_failure_inside_the_statement_leaves_nothing_of_the_batch():
    store = open_pg()
    s = store.session("a")
    s.save("kept", "written before the batch")
    before = audit_store.tip(store.backend)
    schema = schema_of(store)
    with superuser() as su:  # fails at the audit insert, after the versions and postings were written
        su.execute(
            f"CREATE FUNCTION {schema}.fail() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'disk full (simulated)'; END $$"
        )
        su.execute(
            f"CREATE TRIGGER fail BEFORE INSERT ON {schema}.audit FOR EACH STATEMENT EXECUTE FUNCTION {schema}.fail()"
        )
    items = [{"key": f"k{i}", "content": f"lisbon harbour item {i}"} for i in range(500)]
    with pytest.raises(sm.errors.StorageError, match="disk full"):
        s.save_many(items)
    with superuser() as su:
        su.execute(f"DROP TRIGGER fail ON {schema}.audit")
    assert audit_store.tip(store.backend) == before and store.verify_audit() is None
    assert [m.key for m in s.list()] == ["kept"] and s.search("lisbon harbour", 10) == []
    assert derived(schema) == rebuilt(store)
    assert len(s.save_many(items)) == 500 and store.verify_audit() is None
    store.close()


def test_a_missing_session_is_not_found():
    store = open_pg()
    with pytest.raises(sm.errors.NotFound):
        store.backend.save_many("no-such-session", [], store.now())
    store.close()


def sm_clock():
    from conftest import FakeClock

    return FakeClock()
