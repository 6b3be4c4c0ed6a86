"""``stratamem purge --config`` applies the server's ``[retention]`` (and ``STRATAMEM_*_DAYS``), not only defaults."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner
from conftest import FakeClock

import stratamem as sm
from stratamem.cli import cli
from stratamem.turn import Message, Transcript


def _store_with_a_five_day_old_transcript(db: Path) -> None:
    store = sm.open_store(str(db), clock=FakeClock(datetime.now(UTC) - timedelta(days=5)))
    Transcript(store.session("main")).append(Message("user", "the locker code is 31-41-59"))
    store.close()


def _purge(db: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    before = datetime.now(UTC).isoformat()
    result = CliRunner().invoke(cli, ["--db", str(db), "--json", "purge", "--before", before, *args], env=env)
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.output))


def test_defaults_keep_a_five_day_old_transcript(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    _store_with_a_five_day_old_transcript(db)
    assert _purge(db)["purged"] == 0  # 30 days by default


def test_the_config_files_retention_applies(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    _store_with_a_five_day_old_transcript(db)
    config = tmp_path / "server.toml"
    config.write_text("[retention]\ntranscript_days = 1\n")
    assert _purge(db, "--config", str(config))["purged"] == 1


def test_the_environment_applies_without_a_file(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    _store_with_a_five_day_old_transcript(db)
    assert _purge(db, env={"STRATAMEM_TRANSCRIPT_DAYS": "2"})["purged"] == 1


def test_a_bad_retention_is_refused_before_anything_is_purged(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    _store_with_a_five_day_old_transcript(db)
    config = tmp_path / "server.toml"
    config.write_text("[retention]\ntranscript_days = -3\n")
    result = CliRunner().invoke(
        cli, ["--db", str(db), "purge", "--before", datetime.now(UTC).isoformat(), "--config", str(config)]
    )
    assert result.exit_code == 2 and "transcript_days" in result.output
    assert _purge(db)["purged"] == 0  # nothing was purged by the refused run


def test_a_config_file_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "server.toml"
    config.write_bytes(b"[retention]\n\xff\xfe = 1\n")
    result = CliRunner().invoke(
        cli,
        ["--db", str(tmp_path / "m.db"), "purge", "--before", "2026-01-01", "--config", str(config)],
    )
    assert result.exit_code == 2 and "not UTF-8" in result.output and "line 2" in result.output
