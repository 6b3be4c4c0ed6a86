"""Schema migrations: versioned, idempotent, and safe when many processes open a new store at once."""

from __future__ import annotations

import subprocess
import sys

import pg_server
import pytest
from pg_support import open_pg, schema_of, superuser

import stratamem as sm
from stratamem.storage.postgres import schema as pg_schema

OPENER = """
import sys, stratamem as sm
with sm.open_store(sys.argv[1]) as store:
    s = store.session(sys.argv[2])
    s.save("hello", "from " + sys.argv[2])
print("ok")
"""


def test_migrating_twice_changes_nothing():
    url = pg_server.fresh_url(prefix="mig")
    schema = url.rsplit("schema=", 1)[1]
    with superuser() as conn:
        assert pg_schema.migrate_schema(conn, schema, "stratamem_app") == 0
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s", (schema,)).fetchone()
        assert pg_schema.migrate_schema(conn, schema, "stratamem_app") == pg_schema.LATEST
        assert (
            conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s", (schema,)).fetchone()
            == tables
        )
        version = conn.execute(f"SELECT value FROM {schema}.meta WHERE name = 'schema_version'").fetchone()[0]
    assert int(version) == pg_schema.LATEST
    with sm.open_store(url) as store:  # and a store opens on it as usual
        store.session("a").save("k", "v")


def test_many_processes_open_a_new_store_at_once():
    url = pg_server.fresh_url(prefix="race")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, url, f"p{k}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(6)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "ok"
    with sm.open_store(url) as store:
        for k in range(6):
            assert store.session(f"p{k}").get("hello").content == f"from p{k}"
        assert store.verify_audit() is None


def test_a_newer_schema_is_refused():
    store = open_pg()
    schema = schema_of(store)
    store.close()
    with superuser() as conn:
        conn.execute(f"UPDATE {schema}.meta SET value = '999' WHERE name = 'schema_version'")
    with pytest.raises(sm.StorageError, match="newer than this stratamem"):
        sm.open_store(pg_server.with_params(pg_server.base_url(), schema=schema))


def test_reopening_keeps_everything():
    store = open_pg()
    s = store.session("a")
    s.escalate(sm.Level.INTERNAL, "why not")
    s.save("k", "kept across reopen")
    url = pg_server.with_params(pg_server.base_url(), schema=schema_of(store))
    store.close()
    with sm.open_store(url) as again:
        resumed = again.session("a", session_id=s.id)
        assert resumed.taint == sm.Level.INTERNAL
        assert resumed.get("k").content == "kept across reopen"


def test_changing_languages_restems_the_store():
    store = open_pg()
    store.session("a").save("k", "las canciones corriendo")
    url = pg_server.with_params(pg_server.base_url(), schema=schema_of(store))
    store.close()
    with sm.open_store(url, languages=("spanish",)) as spanish:
        assert [h.memory.key for h in spanish.session("a").search("canción")] == ["k"]


def test_bad_urls_fail_clearly():
    with pytest.raises(sm.StorageError, match="schema name"):
        sm.open_store(pg_server.with_params(pg_server.base_url(), schema="bad-name;drop"))
    with pytest.raises(sm.StorageError, match="pool"):
        sm.open_store(pg_server.with_params(pg_server.base_url(), pool_max="0"))
    with pytest.raises(sm.StorageError, match="cannot open"):
        sm.open_store("postgresql://nobody@/nowhere?host=/nonexistent-socket-dir")


def test_version_2_backfills_term_stats_from_the_postings():
    store = open_pg()
    a, b = store.session("a"), store.session("b")
    a.save("k1", "apples and pears")
    a.save("k2", "apples again")
    b.escalate(sm.Level.INTERNAL, "up")
    b.save("k1", "pears only")
    before = [(h.memory.key, h.score) for h in a.search("apples pears")]
    schema = schema_of(store)
    store.close()
    with superuser() as conn:  # back to a version-1 store: no term_stats
        conn.execute(
            f"DROP TABLE {schema}.term_stats, {schema}.turn_messages, {schema}.turn_usage, "
            f"{schema}.memory_vectors"
        )
        conn.execute(
            f"DROP TABLE {schema}.graph_nodes, {schema}.graph_observations, {schema}.graph_edges, "
            f"{schema}.graph_postings, {schema}.graph_part_stats"
        )  # the graph's tables
        conn.execute(f"DROP FUNCTION {schema}.sm_graph_refresh(text, text)")
        conn.execute(f"UPDATE {schema}.meta SET value = '1' WHERE name = 'schema_version'")
        assert pg_schema.migrate_schema(conn, schema, "stratamem_app") == 1
        counts = set(conn.execute(f"SELECT term, agent_id, level, df FROM {schema}.term_stats"))
        recount = set(
            conn.execute(
                f"SELECT term, agent_id, level, count(*) FROM {schema}.postings "
                "GROUP BY term, agent_id, level"
            )
        )
        assert counts == recount and ("appl", "a", 0, 2) in counts
    with sm.open_store(pg_server.with_params(pg_server.base_url(), schema=schema)) as again:
        s = again.session("a")
        assert [(h.memory.key, h.score) for h in s.search("apples pears")] == before
        s.save("k3", "pears")  # and the upkeep carries on from the backfilled counts
        assert "k3" in [h.memory.key for h in s.search("pears")]
