"""SQLite schema versions: a store written by the release opens and upgrades in place, every
intermediate version upgrades, a newer store is refused, and concurrent first opens are safe.

``fixtures/sqlite_release_store.db`` and its ``.json`` (what that release answered) were written by
``fixtures/make_sqlite_release_store.py`` run against the release's code (commit f742655).
"""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import stratamem as sm
from stratamem.embed.hashing import HashEmbedder
from stratamem.errors import StorageError
from stratamem.storage.sqlite import schema

FIXTURES = Path(__file__).parent / "fixtures"
RELEASE_DB = FIXTURES / "sqlite_release_store.db"


def _maker() -> Any:
    spec = importlib.util.spec_from_file_location(
        "make_sqlite_release_store", FIXTURES / "make_sqlite_release_store.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Clock:
    """Fixed times after the fixture's, one second apart."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 2, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def open_hybrid(path: Path) -> sm.Store:
    return sm.open_store(str(path), clock=Clock(), search_mode="hybrid", embedder=HashEmbedder())


def without_hybrid_scores(answers: dict[str, Any]) -> dict[str, Any]:
    """The answers with the hybrid searches left out (compared by ``hybrid_hits``)."""
    return {
        name: {**a, "search": {q: h for q, h in a["search"].items() if not q.startswith("hybrid:")}}
        for name, a in answers.items()
    }


def hybrid_hits(answers: dict[str, Any]) -> dict[tuple[str, str], set[Any]]:
    """Each hybrid search's (key, level) hits. The release fused with min-max normalisation, which gave
    the weakest candidate of both lists 1e-09 although each holds a query term or a similarity; today
    each side is a share of its best (``search/fusion.py``), so scores and order differ, the records
    found do not; where 20 (the page) were found the order decides which, so only the count is kept."""
    return {
        (name, q): {(key, level) for key, level, _ in hits} if len(hits) < 20 else {len(hits)}
        for name, a in answers.items()
        for q, hits in a["search"].items()
        if q.startswith("hybrid:")
    }


def rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table but the recorded schema version, in a stable order."""
    conn = sqlite3.connect(path)
    try:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        out = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    finally:
        conn.close()
    out["meta"] = [row for row in out["meta"] if row[0] != "schema_version"]
    return out


def shape(path: Path) -> set[tuple[str, str, str]]:
    """The schema as (type, name, SQL with whitespace normalised)."""
    conn = sqlite3.connect(path)
    try:
        found = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    finally:
        conn.close()
    return {(kind, name, _spaced(sql)) for kind, name, sql in found}


def _spaced(sql: str | None) -> str:
    return " ".join((sql or "").replace("(", " ( ").replace(")", " ) ").split())


def recorded(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return schema.recorded_version(conn)
    finally:
        conn.close()


@pytest.fixture
def fresh_shape(tmp_path: Path) -> set[tuple[str, str, str]]:
    sm.open_store(str(tmp_path / "fresh.db")).close()
    return shape(tmp_path / "fresh.db")


def test_release_fixture_is_one_checkpointed_file() -> None:
    assert RELEASE_DB.stat().st_size < 400_000
    assert not Path(f"{RELEASE_DB}-wal").exists() and not Path(f"{RELEASE_DB}-shm").exists()
    assert recorded(RELEASE_DB) == 1


def test_release_store_upgrades_in_place(tmp_path: Path, fresh_shape: set[tuple[str, str, str]]) -> None:
    path = tmp_path / "release.db"
    shutil.copyfile(RELEASE_DB, path)
    before = rows(path)
    assert before["postings_tail"] and before["term_deltas"]  # single saves' tails, not folded
    assert any(row[5] is None for row in before["vectors"]) and any(row[5] for row in before["vectors"])

    open_hybrid(path).close()
    assert recorded(path) == schema.LATEST
    after = rows(path)
    # version 8's columns (occurred_us, context) are NULL on the release's rows: nothing is rewritten
    assert all(row[-2:] == (None, None) for row in after["memories"])
    after["memories"] = sorted((row[:-2] for row in after["memories"]), key=repr)
    kept = {t: r for t, r in after.items() if t in before}
    assert kept == before  # every row of every table kept as it was
    assert all(not after[t] for t in after.keys() - before.keys())  # tables added since start empty
    assert shape(path) == fresh_shape  # and the schema is exactly a fresh store's

    expected = json.loads((FIXTURES / "sqlite_release_store.json").read_text())
    maker = _maker()
    store = open_hybrid(path)
    try:
        assert store.verify_audit() is None
        answers = maker.answers(store, expected["sessions"])
        assert without_hybrid_scores(answers) == without_hybrid_scores(expected["answers"])
        assert hybrid_hits(answers) == hybrid_hits(expected["answers"])  # the records found, or how many
        assert [maker.turn_record(r) for r in store.export_turns()] == expected["turns"]
        late = store.session("late")
        assert late.get("late-note") is not None
        old = late.get("late-note")
        assert old.occurred_at == old.created_at  # a row from before the field happened when it was created
        assert [m.key for m in late.list(occurred_since=old.created_at, occurred_until=old.created_at)] == [
            "late-note"
        ]
        assert [h.memory.key for h in late.search("pending vector", mode="hybrid")] == ["late-note"]
        assert store.verify_audit() is None
    finally:
        store.close()


@pytest.mark.parametrize("version", range(schema.LATEST + 1))
def test_every_version_upgrades(tmp_path: Path, version: int, fresh_shape: set[tuple[str, str, str]]) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert schema.upgrade(conn, latest=version) == 0
    conn.close()
    assert recorded(path) == version
    store = sm.open_store(str(path))
    try:
        s = store.session("main")
        s.save("k", "the memory written after the upgrade")
        assert [h.memory.key for h in s.search("memory")] == ["k"]
    finally:
        store.close()
    assert recorded(path) == schema.LATEST
    assert shape(path) == fresh_shape


def test_tail_written_before_it_counted_itself_moves_once(tmp_path: Path) -> None:
    """Step 6: a tail whose rows were also counted in ``term_deltas`` moves into ``postings``."""
    path = tmp_path / "tail.db"
    conn = sqlite3.connect(path, isolation_level=None)
    schema.upgrade(conn, latest=5)
    conn.execute(
        "INSERT INTO postings_tail(term, memory_id, tf, agent_id, level, length) VALUES ('x', 1, 1, 'a', 0, 1)"
    )
    conn.close()
    sm.open_store(str(path)).close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT term, memory_id FROM postings").fetchall() == [("x", 1)]
    assert conn.execute("SELECT count(*) FROM postings_tail").fetchone() == (0,)
    conn.close()


def test_development_store_recorded_as_version_1_is_completed(
    tmp_path: Path, fresh_shape: set[tuple[str, str, str]]
) -> None:
    """Step 2: a store a build before 0.1.0 wrote (no owner column, no turn, graph or vector tables)."""
    path = tmp_path / "dev.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema_version', '1');"
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, clearance INTEGER NOT NULL, "
        "peers TEXT NOT NULL, taint INTEGER NOT NULL, created_us INTEGER NOT NULL);"
    )
    conn.close()
    store = sm.open_store(str(path))
    try:
        assert store.session("main", owner="alice").owner == "alice"
    finally:
        store.close()
    assert shape(path) == fresh_shape


def test_newer_store_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    sm.open_store(str(path)).close()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (str(schema.LATEST + 1),))
    conn.close()
    with pytest.raises(StorageError) as refused:
        sm.open_store(str(path))
    assert f"version {schema.LATEST + 1}" in str(refused.value) and f"({schema.LATEST})" in str(refused.value)
    assert recorded(path) == schema.LATEST + 1  # nothing touched


ROUNDS = 4


def _open_fresh_files(folder: str, barrier: Any, name: str) -> None:
    """Open each round's fresh file as soon as the other process is ready to open it too."""
    for round_ in range(ROUNDS):
        barrier.wait()
        store = sm.open_store(str(Path(folder) / f"race-{round_}.db"))
        try:
            store.session(name).save("k", f"written by {name}")
        finally:
            store.close()


def test_two_processes_opening_a_fresh_file_both_succeed(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    workers = [ctx.Process(target=_open_fresh_files, args=(str(tmp_path), barrier, n)) for n in ("a", "b")]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    for round_ in range(ROUNDS):
        path = tmp_path / f"race-{round_}.db"
        assert recorded(path) == schema.LATEST
        store = sm.open_store(str(path))
        try:
            assert {store.session(n).get("k").content for n in ("a", "b")} == {"written by a", "written by b"}
        finally:
            store.close()
