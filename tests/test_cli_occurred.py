"""The command line: ``save --occurred-at --context`` and ``list --occurred-since --occurred-until``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from stratamem.cli import cli


def test_save_and_list_by_when_it_happened(tmp_path):
    db = str(tmp_path / "c.db")

    def run(*args: str):
        return CliRunner().invoke(cli, ["--db", db, *args])

    assert (
        run(
            "save", "old", "an old fact", "--occurred-at", "2001-01-01T00:00:00+01:00", "--context", "t"
        ).exit_code
        == 0
    )
    assert run("save", "new", "a new fact").exit_code == 0
    r = run("--json", "list", "--occurred-until", "2010-01-01T00:00:00Z")
    assert r.exit_code == 0, r.output
    (entry,) = json.loads(r.stdout)["memories"]
    assert entry["key"] == "old" and entry["occurred_at"] == "2000-12-31T23:00:00+00:00"
    assert [
        m["key"]
        for m in json.loads(run("--json", "list", "--occurred-since", "2010-01-01").stdout)["memories"]
    ] == ["new"]
    for args in (
        ("list", "--occurred-since", "yesterday"),
        ("save", "x", "y", "--occurred-at", "0001-01-01T00:00:00+05:00"),
        ("save", "x", "y", "--context", "z" * 2001),
    ):
        bad = run(*args)
        assert bad.exit_code == 2 and "VALIDATION_ERROR" in bad.output, bad.output
