"""Progress bars for import and migrate: drawn on a terminal, silent when stderr is not one."""

from __future__ import annotations

import io
import json

from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli
from stratamem.progress import tracked


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_on_a_terminal_and_silence_elsewhere():
    tty, pipe = Terminal(), io.StringIO()
    assert list(tracked(range(5), "importing", stream=tty)) == list(range(5))
    assert "importing" in tty.getvalue() and "5/5" in tty.getvalue()
    assert list(tracked(iter(range(5)), "importing", stream=pipe)) == list(range(5))
    assert pipe.getvalue() == ""


def test_import_and_migrate_output_is_unchanged_off_a_terminal(tmp_path):
    db, copy, dump = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "dump.jsonl"
    with sm.open_store(str(db)) as store:
        store.session("a").save_many([{"key": f"k{i}", "content": f"note {i}"} for i in range(30)])
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", str(db), "export", str(dump)]).exit_code == 0
    fresh = tmp_path / "c.db"
    result = runner.invoke(cli, ["--db", str(fresh), "--json", "import", str(dump)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"imported": 30}
    result = runner.invoke(cli, ["migrate", "--from", str(db), "--to", str(copy)])
    assert result.exit_code == 0, result.output
    assert "copying" not in result.output and "migrated" in result.output
