"""The documentation stays short where it must, builds, links, and says what the code does.

- the README stays a page people read (at most 250 lines);
- ``mkdocs build --strict`` builds the site (no broken link, no missing reference);
- no relative link or image in the README or under ``docs/`` points at a missing file or heading;
- the generated reference pages (``python -m stratamem.docs_gen``) are what the code generates now;
- the public contract page names the tools, error codes, exit codes, levels and commands the code has;
- ``stratamem docs`` finds a built site, or says how to build one.
(The code blocks themselves run in ``tests/test_readme_examples.py``.)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from stratamem import docs_gen, errors
from stratamem.cli import cli
from stratamem.cli.docs_command import locate
from stratamem.levels import Level
from stratamem.tools.specs import BY_PROFILE, TRIGGERFISH, ZEROCLAW

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
README_MAX_LINES = 250


def test_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; move reference material to docs/"
    )


def test_site_builds_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**_env(), "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    for page in (
        "index.html",
        "reference/python/index.html",
        "reference/cli/index.html",
        "contract/index.html",
    ):
        assert (tmp_path / "site" / page).is_file(), page
    api = (tmp_path / "site" / "reference" / "python" / "index.html").read_text(encoding="utf-8")
    assert "open_store" in api and "escalate" in api  # mkdocstrings rendered the docstrings


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


def _prose(path: Path) -> str:
    """The Markdown outside fenced code blocks and inline code (where a link is text, not a link)."""
    kept, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(kept)


def _slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc makes it (also what GitHub makes of plain headings)."""
    text = re.sub(r"[`*_]", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[\s]+", "-", text)


def _anchors(path: Path) -> set[str]:
    headings = [line.lstrip("#").strip() for line in _prose(path).splitlines() if re.match(r"^#{1,6} ", line)]
    return {_slug(h) for h in headings}


def test_no_broken_internal_link() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(_prose(page)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            where = f"{page.relative_to(ROOT)} -> {target}"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{where}: no such heading")
            elif file_part and page.is_relative_to(DOCS) and not dest.is_relative_to(DOCS):
                broken.append(f"{where}: outside docs/ (the site cannot link it)")
    assert not broken, "\n".join(broken)


def test_generated_reference_is_current(tmp_path: Path) -> None:
    docs_gen.write(tmp_path)
    stale = []
    for fresh in sorted(tmp_path.iterdir()):
        kept = DOCS / "reference" / fresh.name
        if not kept.is_file() or kept.read_text(encoding="utf-8") != fresh.read_text(encoding="utf-8"):
            stale.append(fresh.name)
    assert not stale, f"docs/reference/{stale} out of date: run `python -m stratamem.docs_gen`"


def test_generated_reference_covers_the_code() -> None:
    pages = docs_gen.pages()
    from stratamem.env_settings import SETTINGS

    for name in SETTINGS:
        assert f"`{name}`" in pages["configuration.md"], name
    for tools in BY_PROFILE.values():
        for spec in tools:
            assert f"### `{spec.name}`" in pages["mcp-tools.md"], spec.name
    for command in cli.commands:
        assert f"## `stratamem {command}`" in pages["cli.md"], command
    assert "## `GET /v1/health`" in pages["rest.md"]


# The public contract (docs/contract.md, a copy of the project's CONTRACT.md) against the code.
CONTRACT = (DOCS / "contract.md").read_text(encoding="utf-8")


# Where the contract is kept beside a checkout (changes are made there first); absent in a lone checkout.
SHARED_CONTRACT = ROOT.parent / "shared" / "CONTRACT.md"


@pytest.mark.skipif(not SHARED_CONTRACT.is_file(), reason="no shared CONTRACT.md beside this checkout")
def test_contract_page_is_the_contract() -> None:
    assert SHARED_CONTRACT.read_text(encoding="utf-8") == CONTRACT, "copy CONTRACT.md to docs/contract.md"


def _section(number: int) -> str:
    return CONTRACT.split(f"\n## {number}. ", 1)[1].split("\n## ", 1)[0]


def test_contract_tools_exist_in_their_profiles() -> None:
    tools = _section(8)
    triggerfish, zeroclaw = tools.split("Profile `zeroclaw`", 1)
    for profile, text in ((TRIGGERFISH, triggerfish), (ZEROCLAW, zeroclaw)):
        named = set(re.findall(r"`(memory_\w+)\{", text))
        offered = {spec.name for spec in BY_PROFILE[profile]}
        assert named and named <= offered, (profile, named - offered)


def test_contract_error_and_exit_codes_match_the_code() -> None:
    codes = {
        cls.code: cls.exit_code for cls in (errors.ValidationError, errors.NotFound, errors.PolicyBlocked)
    }
    codes[errors.StorageError.code] = errors.StorageError.exit_code
    named = set(re.findall(r'"([A-Z_]+)"', _section(8).split("Errors:", 1)[1].split("\n", 1)[0]))
    assert set(codes) <= named
    exits = _section(9).split("Exit codes:", 1)[1].split("\n", 1)[0]
    stated = {int(n): what for n, what in re.findall(r"(\d) ([a-z/ ]+)", exits)}
    assert stated[codes["NOT_FOUND"]].startswith("not found")
    assert "validation" in stated[codes["VALIDATION_ERROR"]]
    assert stated[codes["STORAGE_ERROR"]].startswith("storage")
    assert "policy" in stated[codes["POLICY_BLOCKED"]]


def test_contract_levels_and_commands_match_the_code() -> None:
    order = " < ".join(level.name for level in sorted(Level))
    assert f"`{order}`" in _section(2)
    commands = set(re.findall(r"`(\w+)[ `]", _section(9)))
    nested = {"verify", "show", "audit", "stratamem"}
    missing = {c for c in commands if c not in cli.commands and c not in nested and c.islower()}
    assert not missing, missing


def test_docs_command_points_at_the_site(tmp_path: Path) -> None:
    assert locate(tmp_path)["site"] is None and "no documentation" in locate(tmp_path)["hint"]
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    assert "mkdocs build" in locate(tmp_path)["hint"] and locate(tmp_path)["site"] is None
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("<html></html>", encoding="utf-8")
    assert locate(tmp_path)["site"] == str(tmp_path / "site" / "index.html")
    result = CliRunner().invoke(cli, ["docs"])
    assert result.exit_code == 0 and ("mkdocs" in result.output or "site" in result.output)


def test_every_http_error_code_is_in_the_error_reference() -> None:
    from stratamem.docs_gen import errors_reference
    from stratamem.server.responses import STATUS

    page = errors_reference()
    assert [code for code in STATUS if f"`{code}`" not in page] == []
