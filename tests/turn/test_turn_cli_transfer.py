"""`stratamem export` / `import` carry transcripts and usage beside memories; bad turn lines import nothing."""

from __future__ import annotations

import json

from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli


def test_cli_export_and_import_carry_turn_records(tmp_path) -> None:
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    with sm.open_store(src) as store:
        session = store.session("main")
        session.save("fact", "a fact")
        turn = session.turn("a question about the fact, long enough")
        turn.record_usage("m", 3, 4, cost_usd="0.5")
        turn.end("an answer")
    out = tmp_path / "dump.jsonl"
    assert CliRunner().invoke(cli, ["--db", src, "export", str(out)]).exit_code == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line.get("record") for line in lines].count("message") == 2
    assert [line.get("record") for line in lines].count("usage") == 1
    assert CliRunner().invoke(cli, ["--db", dst, "import", str(out)]).exit_code == 0
    again = CliRunner().invoke(cli, ["--db", dst, "export"]).output
    assert [json.loads(line) for line in again.splitlines()] == lines


def test_a_bad_turn_line_imports_nothing(tmp_path) -> None:
    dst = str(tmp_path / "b.db")
    bad = tmp_path / "bad.jsonl"
    good = {"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "main"}
    usage = {
        "record": "usage",
        "session_id": "s",
        "agent_id": "main",
        "level": "PUBLIC",
        "model": "m",
        "input_tokens": 1,
        "output_tokens": 1,
        "cached_input_tokens": 0,
        "cost_usd": "NaN",
        "time": "2026-01-01T00:00:00+00:00",
    }
    bad.write_text(json.dumps(good) + "\n" + json.dumps(usage) + "\n")
    result = CliRunner().invoke(cli, ["--db", dst, "import", str(bad)])
    assert result.exit_code == 2 and "line 2" in result.output
    with sm.open_store(dst) as store:
        assert list(store.export()) == [] and list(store.export_turns()) == []
