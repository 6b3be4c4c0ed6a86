"""What stratamem creates on disk is its owner's only (issue 9, item 5): files 0600, directories 0700.

The umask is set wide open (0) so a mode that merely relied on the umask would show.
"""

from __future__ import annotations

import os
import stat
from datetime import timedelta

import pytest
from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_umask():
    old = os.umask(0)
    yield
    os.umask(old)


def test_database_and_journals_are_0600_and_new_dirs_0700(tmp_path, open_umask):
    db = tmp_path / "a" / "b" / "memory.db"
    with sm.open_store(str(db)) as store:
        s = store.session("main")
        s.escalate(sm.Level.RESTRICTED, "secret")
        s.save("k", "restricted content")
        s.delete("k")
        assert mode(db) == 0o600
        for suffix in ("-wal", "-shm"):
            assert os.path.exists(str(db) + suffix)
            assert mode(str(db) + suffix) == 0o600
        store.purge(before=store.now() + timedelta(seconds=1))
    assert mode(tmp_path / "a") == 0o700
    assert mode(tmp_path / "a" / "b") == 0o700


def test_rollback_journal_is_0600(tmp_path, open_umask):
    """A store that falls back to a rollback journal (WAL off) still gets a private journal file."""
    import sqlite3

    db = tmp_path / "m.db"
    sm.open_store(str(db)).close()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO meta(name, value) VALUES ('x', 'y')")
    assert mode(str(db) + "-journal") == 0o600
    conn.execute("ROLLBACK")
    conn.close()


def test_default_home_is_created_0700(tmp_path, monkeypatch, open_umask):
    home = tmp_path / "home" / "stratamem"
    monkeypatch.setenv("STRATAMEM_HOME", str(home))
    monkeypatch.delenv("STRATAMEM_DB", raising=False)
    with sm.open_store() as store:
        store.session("main").save("k", "v")
    assert mode(home) == 0o700 and mode(home.parent) == 0o700
    assert mode(home / "memory.db") == 0o600


def test_wider_leftover_journal_is_narrowed_to_the_database_mode(tmp_path, open_umask):
    db = str(tmp_path / "m.db")
    with sm.open_store(db) as store:
        store.session("main").save("k", "v")
        os.chmod(db + "-wal", 0o644)
    # A -wal left wider than the database (an older version, another tool) is narrowed on open.
    os.chmod(db, 0o600)
    import sqlite3

    keeper = sqlite3.connect(db)  # keeps the -wal from being removed at close
    keeper.execute("PRAGMA journal_mode = WAL")
    keeper.execute("CREATE TABLE IF NOT EXISTS x (y)")
    os.chmod(db + "-wal", 0o644)
    with sm.open_store(db):
        assert mode(db + "-wal") == 0o600
    keeper.close()


def test_export_file_and_dev_token_are_private(tmp_path, monkeypatch, open_umask):
    db = str(tmp_path / "m.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db, "save", "k", "v"]).exit_code == 0
    out = tmp_path / "export.jsonl"
    assert runner.invoke(cli, ["--db", db, "export", str(out)]).exit_code == 0
    assert mode(out) == 0o600

    from stratamem.server.devtoken import ensure_token

    token_file = tmp_path / "tok" / "home" / "server-token"
    ensure_token(token_file)
    assert mode(token_file) == 0o600
    assert mode(token_file.parent) == 0o700 and mode(token_file.parent.parent) == 0o700


def test_transcripts_and_usage_open_no_file_of_their_own(tmp_path, open_umask):
    """They live in the store's database (0600 like it); a turn creates no other file."""
    import stratamem as sm

    store = sm.open_store(str(tmp_path / "memory.db"))
    turn = store.session("main").turn("a message long enough to be autosaved, about Lisbon")
    turn.record_usage("m", 1, 1)
    turn.end("ok")
    store.close()
    assert {p.name for p in tmp_path.iterdir()} <= {"memory.db", "memory.db-wal", "memory.db-shm"}
    assert mode(tmp_path / "memory.db") == 0o600
