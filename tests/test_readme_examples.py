"""Every code example in README.md and the documentation site (docs/**/*.md) runs, so the docs never rot.

Conventions, written in the Markdown as HTML comments on the line right before a fence:

- ``<!-- continues -->``: the block continues the one before it (in the same file): it runs after it, in
  the same subprocess, Python namespace, ``STRATAMEM_HOME`` and working directory. Blocks without it run
  alone, from a fresh temporary ``STRATAMEM_HOME``.
- ``<!-- not run: reason -->``: the block is never run (keep these few): the set-up commands, package
  installs, and what needs something outside this machine (a desktop client, a managed database).

``python`` blocks are executed (tracebacks name README.md and its line); ``bash`` blocks run under
``bash -e`` with this venv's ``stratamem`` first on ``PATH``; ``json`` and ``toml`` blocks must parse. Paths
under ``/home/me`` stand for a temporary directory. A block that talks to ``http://127.0.0.1:8765`` runs
against a ``stratamem serve`` this test starts on a free port, with ``STRATAMEM_TOKEN`` read from the
development-token file that ``stratamem config`` names, as the README tells a user to do.
Each block is its own test, named by file, section and language.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Generated reference pages hold no examples of their own (tests/test_docs.py checks they match the code).
SOURCES = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.parts),
]
SERVER_URL = "http://127.0.0.1:8765"
FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*(continues|not run:.*?)\s*-->\s*$")


@dataclass
class Block:
    file: str
    line: int  # of the first code line
    lang: str
    code: str
    section: str
    continues: bool
    not_run: str | None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]


def parse(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file, with their section and markers."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    section, previous, i = "top", "", 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            if lines[i].startswith("#"):
                section = lines[i].lstrip("#").strip()
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        marker = MARKER.match(previous)
        blocks.append(
            Block(
                file=str(path.relative_to(ROOT)),
                line=i + 2,
                lang=fence.group(1),
                code="\n".join(lines[i + 1 : end]) + "\n",
                section=section,
                continues=bool(marker and marker.group(1) == "continues"),
                not_run=marker.group(1)[len("not run:") :].strip()
                if marker and marker.group(1) != "continues"
                else None,
            )
        )
        previous, i = "", end + 1
    return blocks


def _cases() -> list[pytest.param]:
    cases = []
    for path in SOURCES:
        blocks = parse(path)
        seen: dict[str, int] = {}
        for n, block in enumerate(blocks):
            if block.lang not in ("python", "bash", "json", "toml"):
                continue
            name = f"{block.file}#{_slug(block.section)}-{block.lang}"
            seen[name] = seen.get(name, 0) + 1
            name += f"-{seen[name]}" if seen[name] > 1 else ""
            chain = [block]
            for earlier in reversed(blocks[:n]):
                if not chain[0].continues:
                    break
                chain.insert(0, earlier)
            marks = [pytest.mark.skip(reason=block.not_run)] if block.not_run else []
            cases.append(pytest.param(chain, id=name, marks=marks))
    return cases


# Runs a chain of blocks in one process: Python blocks in one namespace, bash blocks as child processes.
DRIVER = r"""
import json, subprocess, sys
namespace = {"__name__": "__readme__"}
for block in json.load(sys.stdin):
    if block["lang"] == "python":
        code = "\n" * (block["line"] - 1) + block["code"]
        exec(compile(code, block["file"], "exec"), namespace)
    elif block["lang"] == "bash":
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block["code"]])
        if done.returncode:
            sys.exit(f"{block['file']} line {block['line']}: bash exited {done.returncode}")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("STRATAMEM_") or k == "STRATAMEM_SEARCH_MODE"
    }
    env["STRATAMEM_HOME"] = str(tmp_path / "home")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    return env


def _start_server(env: dict[str, str], cwd: Path) -> tuple[subprocess.Popen[str], str]:
    """`stratamem serve` on a free port, and the URL once /v1/health answers."""
    import httpx2

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "stratamem", "serve", "--port", str(port)],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx2.get(f"{url}/v1/health", timeout=2).status_code == 200:
                return proc, url
        except httpx2.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"stratamem serve did not start: {proc.communicate()[1]}")


def _check_data(block: Block) -> None:
    try:
        json.loads(block.code) if block.lang == "json" else tomllib.loads(block.code)
    except ValueError as exc:
        raise AssertionError(f"{block.file} line {block.line}: {block.lang} does not parse: {exc}") from exc


@pytest.mark.parametrize("chain", _cases())
def test_readme_block_runs(chain: list[Block], tmp_path: Path) -> None:
    if chain[-1].lang in ("json", "toml"):
        _check_data(chain[-1])
        return
    (tmp_path / "home").mkdir()
    env = _env(tmp_path)
    runnable = [b for b in chain if b.lang in ("python", "bash")]
    payload = [
        {"file": b.file, "line": b.line, "lang": b.lang, "code": b.code.replace("/home/me", str(tmp_path))}
        for b in runnable
    ]
    server = None
    try:
        if any(SERVER_URL in b["code"] for b in payload):
            server, url = _start_server(env, tmp_path)
            for b in payload:
                b["code"] = b["code"].replace(SERVER_URL, url)
            config = subprocess.run(
                [sys.executable, "-m", "stratamem", "config", "--json"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            env["STRATAMEM_TOKEN"] = Path(json.loads(config.stdout)["server_token"]).read_text().strip()
        done = subprocess.run(
            [sys.executable, "-c", DRIVER],
            input=json.dumps(payload),
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
    where = ", ".join(f"{b.file} line {b.line}" for b in runnable)
    assert done.returncode == 0, f"{where}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"


def test_markers_are_well_formed() -> None:
    """A misspelt marker would silently run or skip a block: every HTML comment before a fence is known."""
    for path in SOURCES:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines[:-1]):
            if line.strip().startswith("<!--") and FENCE.match(lines[i + 1]):
                assert MARKER.match(line.strip()), f"{path.name} line {i + 1}: unknown marker {line!r}"
    not_run = [b for path in SOURCES for b in parse(path) if b.not_run]
    assert len(not_run) <= 3, [f"{b.file} line {b.line}" for b in not_run]
