"""Where the CLI's store is: a read command never creates one, sqlite:/// URLs follow SQLAlchemy's rule, and
an output path in a missing directory is a usage error naming it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli
from stratamem.install_info import resolved_url
from stratamem.store import missing_store, sqlite_path

READS = [
    ["list"],
    ["get", "k"],
    ["search", "k"],
    ["export"],
    ["audit", "verify"],
    ["audit", "show"],
    ["audit", "anchor"],
    ["session", "show", "--session", "s1"],
    ["reindex"],
]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATAMEM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("STRATAMEM_DB", raising=False)
    monkeypatch.delenv("STRATAMEM_SESSION", raising=False)
    monkeypatch.chdir(tmp_path)


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize("command", READS, ids=lambda c: " ".join(c))
def test_a_read_command_refuses_a_missing_store(tmp_path, command):
    typo = tmp_path / "memroy.db"
    r = invoke("--db", str(typo), *command)
    assert r.exit_code == 2, r.output
    assert str(typo) in r.output and "no store" in r.output
    assert not typo.exists()  # nothing created


@pytest.mark.parametrize("command", READS[:3], ids=lambda c: " ".join(c))
def test_read_commands_refuse_a_missing_store_from_the_environment(tmp_path, monkeypatch, command):
    monkeypatch.setenv("STRATAMEM_DB", str(tmp_path / "nowhere" / "m.db"))
    r = invoke("--json", *command)
    assert r.exit_code == 2 and json.loads(r.output)["error"]["code"] == "VALIDATION_ERROR"
    assert not (tmp_path / "nowhere").exists()


def test_a_missing_markdown_folder_is_refused_by_reads(tmp_path):
    r = invoke("--db", f"markdown://{tmp_path}/notes", "list")
    assert r.exit_code == 2 and "notes" in r.output and not (tmp_path / "notes").exists()


def test_write_commands_still_create_the_store(tmp_path):
    db = tmp_path / "new" / "m.db"
    assert invoke("--db", str(db), "save", "k", "v").exit_code == 0
    assert db.exists()
    r = invoke("--db", str(db), "list")
    assert r.exit_code == 0 and "k [PUBLIC]" in r.output


def test_sqlite_urls_follow_sqlalchemy(tmp_path):
    """Three slashes: relative to the working directory; four: absolute."""
    assert sqlite_path("sqlite:///relative.db") == "relative.db"
    assert sqlite_path("sqlite:///data/m.db") == "data/m.db"
    assert sqlite_path("sqlite:////srv/m.db") == "/srv/m.db"
    assert sqlite_path("sqlite://") == ":memory:" and sqlite_path("sqlite:///:memory:") == ":memory:"
    r = invoke("--db", "sqlite:///relative.db", "save", "k", "v")
    assert r.exit_code == 0 and (tmp_path / "relative.db").exists()  # the cwd, not /relative.db
    assert not Path("/relative.db").exists()
    assert resolved_url("sqlite:///relative.db") == str(tmp_path / "relative.db")
    absolute = tmp_path / "abs.db"
    assert f"sqlite:///{absolute}".startswith("sqlite:////")
    assert invoke("--db", f"sqlite:///{absolute}", "save", "k", "v").exit_code == 0
    assert absolute.exists()
    assert invoke("--db", f"sqlite:///{absolute}", "get", "k").exit_code == 0


def test_an_empty_sqlite_url_is_a_usage_error():
    r = invoke("--db", "sqlite:///", "list")
    assert r.exit_code == 2 and "sqlite:////abs.db" in r.output


def test_missing_store_names_nothing_for_memory_and_existing_stores(tmp_path):
    assert missing_store(":memory:") is None
    db = tmp_path / "m.db"
    assert missing_store(str(db)) == str(db)
    sm.Store(str(db)).close()
    assert missing_store(str(db)) is None and missing_store(f"sqlite:///{db}") is None


@pytest.mark.parametrize("command", [["export"], ["audit", "anchor"]], ids=lambda c: " ".join(c))
def test_an_output_in_a_missing_directory_is_a_usage_error(tmp_path, command):
    db = str(tmp_path / "m.db")
    assert invoke("--db", db, "save", "k", "v").exit_code == 0
    target = tmp_path / "missing" / "dir" / "x.jsonl"
    r = invoke("--db", db, *command, str(target))
    assert r.exit_code == 2, r.output  # not STORAGE_ERROR, exit 3
    assert "STORAGE_ERROR" not in r.output and str(target) in r.output and "does not exist" in r.output
    assert not os.path.exists(tmp_path / "missing")


@pytest.mark.parametrize(
    ("command", "named"),
    [
        (["list", "--limit", "0"], "--limit"),
        (["list", "--limit", "500"], "--limit"),
        (["list", "--limit", "ten"], "--limit"),
        (["search", "x", "-n", "0"], "-n"),
        (["search", "x", "-n", "-1"], "-n"),
        (["search", "x", "-n", "101"], "-n"),
        (["audit", "show", "--limit", "-1"], "--limit"),
    ],
)
def test_out_of_range_counts_are_refused_naming_the_option(tmp_path, command, named):
    """Never clamped while the help says "1 to 200": refused, exit 2, the option named."""
    db = str(tmp_path / "m.db")
    assert invoke("--db", db, "save", "k", "v").exit_code == 0
    r = invoke("--db", db, *command)
    assert r.exit_code == 2 and named in r.output, r.output
    assert invoke("--db", db, "list", "--limit", "200").exit_code == 0
    assert invoke("--db", db, "search", "v", "-n", "100").exit_code == 0
