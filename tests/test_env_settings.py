"""``stratamem config`` shows every extra and every ``STRATAMEM_*`` setting the code reads.

Both lists are derived, not hand-kept: the extras from ``extras.EXTRAS`` (checked
here against pyproject.toml both ways), the settings from ``env_settings.SETTINGS``
(checked here against every ``STRATAMEM_`` name written in ``src/``).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from stratamem.cli import cli
from stratamem.env_settings import SETTINGS, env_name
from stratamem.extras import DEVELOPMENT_EXTRAS, EXTRAS

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "src" / "stratamem").rglob("*.py"))
REGISTRY = ROOT / "src" / "stratamem" / "env_settings.py"


def test_every_stratamem_name_in_the_sources_is_registered() -> None:
    """A variable read anywhere (a literal, a click ``envvar``, ``env_name("x")``) is in the registry."""
    unlisted: dict[str, list[str]] = {}
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        names = set(re.findall(r"STRATAMEM_[A-Z][A-Z0-9_]*", text))
        names |= {"STRATAMEM_" + s.upper() for s in re.findall(r"env_name\(\"(\w+)\"\)", text)}
        for name in names - SETTINGS.keys():
            unlisted.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert not unlisted, f"read but not in env_settings.SETTINGS: {unlisted}"


def test_no_module_builds_a_name_around_the_registry() -> None:
    """A name built from the bare prefix would escape the scan above: only the registry builds names."""
    builders = [
        str(path.relative_to(ROOT))
        for path in SOURCES
        if path != REGISTRY and re.search(r"""["']STRATAMEM_["']""", path.read_text(encoding="utf-8"))
    ]
    assert builders == []


def test_env_name_refuses_an_unregistered_setting() -> None:
    assert env_name("read_only") == "STRATAMEM_READ_ONLY"
    with pytest.raises(KeyError, match="STRATAMEM_NO_SUCH"):
        env_name("no_such")


def test_extras_table_matches_pyproject() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert set(EXTRAS) == set(declared) - DEVELOPMENT_EXTRAS
    assert set(declared) >= DEVELOPMENT_EXTRAS


def test_config_prints_every_extra_and_the_settings_in_effect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STRATAMEM_HOME", str(tmp_path))
    for name in SETTINGS:
        if name != "STRATAMEM_HOME":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STRATAMEM_SEARCH_MODE", "bm25")
    monkeypatch.setenv("STRATAMEM_TRANSCRIPT_DAYS", "30")
    monkeypatch.setenv("STRATAMEM_TOKEN", "s3cret-token-value")
    runner = CliRunner()
    info = json.loads(runner.invoke(cli, ["--json", "config"], catch_exceptions=False).output)
    assert set(info["extras"]) == set(EXTRAS) >= {"semantic", "multilingual"}
    assert info["env"] == {
        "STRATAMEM_HOME": str(tmp_path),
        "STRATAMEM_SEARCH_MODE": "bm25",
        "STRATAMEM_TRANSCRIPT_DAYS": "30",
        "STRATAMEM_TOKEN": "***",
    }
    text = runner.invoke(cli, ["config"], catch_exceptions=False).output
    assert "semantic " in text and "multilingual " in text
    assert "env      STRATAMEM_SEARCH_MODE=bm25" in text
    assert "s3cret" not in text
