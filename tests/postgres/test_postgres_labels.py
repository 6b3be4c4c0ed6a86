"""Labels (a level and compartments) on PostgreSQL: the backend reads and writes by label, and row-level
security enforces the compartment rule in the database whatever SQL the application role runs."""

from __future__ import annotations

import pytest
from pg_support import open_pg, schema_of, superuser, url_at_version
from psycopg import errors

import stratamem as sm
from stratamem.labels import Label

CONF = sm.Level.CONFIDENTIAL


@pytest.fixture(scope="module")
def world():
    """HR and FINANCE records of agent a, with one PUBLIC record; sessions at three labels."""
    store = open_pg(search_mode="semantic", embedder="hash")
    store.define_compartments("HR", "FINANCE")
    hr = store.session("a", clearance="CONFIDENTIAL+HR")
    hr.escalate(CONF, "personnel files")
    hr.enter("HR", "personnel files")
    hr.save("review", "salary review for the payroll team")
    hr.save("shared", "hr version of the payroll plan")
    fin = store.session("a", clearance="CONFIDENTIAL+FINANCE")
    fin.escalate(CONF, "budget")
    fin.enter("FINANCE", "budget")
    fin.save("budget", "payroll budget for next year")
    store.session("a").save("shared", "public payroll plan")
    both = store.session("a", clearance="RESTRICTED+HR+FINANCE")
    both.escalate(sm.Level.RESTRICTED, "everything")
    both.enter("HR", "everything")
    both.enter("FINANCE", "everything")
    yield store, hr, fin, both
    store.close()


def _keys_by_mode(session: sm.Session) -> dict[str, set[str]]:
    found = {"get": {k for k in ("review", "budget", "shared") if session.get(k) is not None}}
    found["list"] = {m.key for m in session.list()}
    for mode in ("lexical", "semantic", "hybrid"):
        found[mode] = {h.memory.key for h in session.search("payroll salary review", mode=mode)}
    return found


def test_a_compartmented_record_is_read_only_by_sessions_holding_its_compartments(world):
    store, hr, fin, both = world
    for mode, keys in _keys_by_mode(fin).items():
        assert "review" not in keys, mode
        assert "budget" in keys, mode
    for mode, keys in _keys_by_mode(hr).items():
        assert "review" in keys and "budget" not in keys, mode
    for mode, keys in _keys_by_mode(both).items():
        assert {"review", "budget"} <= keys, mode
    assert hr.get("review").compartments == frozenset({"HR"})
    assert fin.get("shared").content == "public payroll plan"  # HR's version is not FINANCE's to see
    assert hr.get("shared").content == "hr version of the payroll plan"
    resumed = store.session("a", session_id=hr.id)  # its resume event is recorded at its label
    assert resumed.compartments == {"HR"} and resumed.get("review") is not None
    assert store.verify_audit() is None


def test_the_policies_name_every_compartment_bit():
    from stratamem.labels import ALL_COMPARTMENT_BITS
    from stratamem.storage.postgres import label_policies

    assert label_policies._ALL_COMPARTMENT_BITS == ALL_COMPARTMENT_BITS


def _bound(store: sm.Store, session: sm.Session):
    """A pooled connection of the backend, in a transaction bound to ``session`` as the backend binds it."""
    conn = store.backend._pool.getconn()
    conn.execute("BEGIN")
    store.backend._bound_session(conn, session.id)
    return conn


def test_row_level_security_enforces_compartments(world):
    store, hr, fin, _ = world
    hr_code = store.compartments.encode(Label(CONF, frozenset({"HR"})))
    fin_code = store.compartments.encode(Label(CONF, frozenset({"FINANCE"})))
    conn = _bound(store, fin)
    try:
        assert conn.execute("SELECT sm_taint()").fetchone()[0] == fin_code
        for table in ("memories", "postings", "memory_vectors", "part_stats", "term_stats"):
            levels = {r[0] for r in conn.execute(f"SELECT DISTINCT level FROM {table}")}
            assert hr_code not in levels and fin_code in levels, table
        assert (
            conn.execute("SELECT count(*) FROM memories WHERE content LIKE '%%salary%%'").fetchone()[0] == 0
        )
        assert hr_code not in {r[0] for r in conn.execute("SELECT taint FROM audit")}
        for level in (int(CONF), hr_code, fin_code | hr_code):  # the level alone, another label, a wider one
            with pytest.raises(errors.InsufficientPrivilege, match="row-level security"), conn.transaction():
                conn.execute(
                    "INSERT INTO memories (agent_id, key, level, content, tags, category, created_us, "
                    "updated_us, lineage_id) VALUES ('a', 'leak', %s, 'budget figures', '[]', 'core', 0, 0, 'x')",
                    (level,),
                )
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"), conn.transaction():
            conn.execute("UPDATE memories SET level = %s WHERE key = 'budget'", (int(CONF),))
        with pytest.raises(errors.CheckViolation, match="never goes down"), conn.transaction():
            # a taint rises in the label order only: trading FINANCE for HR is not a rise
            conn.execute("UPDATE sessions SET taint = %s WHERE id = %s", (hr_code, fin.id))
    finally:
        conn.execute("ROLLBACK")
        store.backend._pool.putconn(conn)
    conn = _bound(store, hr)
    try:
        assert conn.execute("SELECT count(*) FROM memories WHERE level = %s", (fin_code,)).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM memories WHERE level = %s", (hr_code,)).fetchone()[0] == 2
    finally:
        conn.execute("ROLLBACK")
        store.backend._pool.putconn(conn)


def test_labels_need_64_bits(world):
    store, *_ = world
    with superuser() as su:
        types = su.execute(
            "SELECT DISTINCT data_type FROM information_schema.columns WHERE table_schema = %s "
            "AND column_name IN ('level', 'clearance', 'taint', 'previous', 'new')",
            (schema_of(store),),
        ).fetchall()
    assert types == [("bigint",)]


def test_a_store_at_version_13_upgrades_in_place_and_then_holds_compartments(monkeypatch):
    url, schema = url_at_version(monkeypatch, 13)
    with sm.open_store(url) as old:
        s = old.session("a")
        s.escalate(sm.Level.INTERNAL, "up")
        s.save_many([{"key": f"k{i}", "content": f"old words {i}"} for i in range(3)])
        s.save("one", "a single save under version 13")
        sid = s.id
    with superuser() as su:
        before = su.execute(f"SELECT id, key, level, content FROM {schema}.memories ORDER BY id").fetchall()
    monkeypatch.undo()
    with sm.open_store(url) as store:
        with superuser() as su:
            assert (
                su.execute(f"SELECT id, key, level, content FROM {schema}.memories ORDER BY id").fetchall()
                == before
            )
        resumed = store.session("a", session_id=sid)
        assert resumed.get("one").content == "a single save under version 13"
        assert {h.memory.key for h in resumed.search("old words")} == {"k0", "k1", "k2"}
        store.define_compartments("HR")
        hr = store.session("a", clearance="CONFIDENTIAL+HR")
        hr.enter("HR", "files")
        hr.save("one", "hr's own")
        assert resumed.get("one").content == "a single save under version 13"
        assert hr.get("one").content == "hr's own" and hr.get("one").compartments == {"HR"}
        assert store.verify_audit() is None


def test_the_graphs_anchor_flag_compares_labels_not_integers():
    """An observation at PUBLIC+FINANCE whose node's only live version is PUBLIC+HR is orphaned: PUBLIC+HR (4)
    is a smaller integer than PUBLIC+FINANCE (8) but not below it (``sm_graph_refresh`` of version 16)."""
    store = open_pg()
    store.define_compartments("HR", "FINANCE")
    plain = store.session("main", clearance="PUBLIC")
    hr = store.session("main", clearance="PUBLIC+HR")
    hr.enter("HR", "need to know")
    fin = store.session("main", clearance="PUBLIC+FINANCE")
    fin.enter("FINANCE", "need to know")
    plain.graph.capture("Erin", "person", content="on the staff list")
    fin.graph.add_observations([("Erin", ["finance note"])])
    hr.graph.capture("Erin", "person", content="hr file")
    plain.graph.delete_nodes(["Erin"])
    with superuser() as su:
        (anchored,) = su.execute(
            f"SELECT anchored FROM {schema_of(store)}.graph_observations WHERE text = 'finance note'"
        ).fetchone()
    assert anchored == 0
    store.close()
