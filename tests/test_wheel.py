"""The wheel builds from the sdist, carries its package data, and works installed outside the source tree.

Offline: `python -m build --no-isolation` (setuptools and build come with the `test` extra) builds the sdist
from a copy of the tree and the wheel from that sdist, so a file the sdist forgets fails the wheel. The
wheel goes with `--no-deps` into a new venv whose only view of the test venv is a `.pth` line naming its
site-packages: a plain path line, so the editable install's own `.pth` there is never processed, and the new
venv's site-packages (holding the wheel) comes first. `tests/wheel_smoke.py` then asserts that `stratamem`
was imported from the new venv. `.ci/run` runs the same smoke test on a venv with only the core
dependencies from PyPI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP = {
    ".git",
    ".venv",
    "build",
    "dist",
    "site",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".ruff_cache",
}


def _copy_tree(dst: Path) -> None:
    shutil.copytree(
        ROOT,
        dst,
        ignore=lambda _d, names: [n for n in names if n in SKIP or n.endswith((".egg-info", ".pyc", ".db"))],
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    _copy_tree(src)
    out = work / "dist"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_sdist_has_what_a_build_needs(dist):
    [sdist] = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for needed in (
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        "src/stratamem/embed/data/minilm-tokenizer.json.gz",
        "src/stratamem/embed/data/NOTICE",
        "src/stratamem/server/static/console/index.html",
        "src/stratamem/server/static/docs/docs.js",
        "tests/conftest.py",
        "examples/openai_tool_loop.py",
        "mkdocs.yml",
        "docs/index.md",
        "docs/reference/cli.md",
        "docs/assets/site-home.png",
    ):
        assert needed in names, needed
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_wheel_has_package_data_and_no_tests(dist):
    [wheel] = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "stratamem/py.typed",
        "stratamem/embed/data/minilm-tokenizer.json.gz",
        "stratamem/embed/data/NOTICE",
        "stratamem/server/static/console/console.js",
        "stratamem/server/static/docs/docs.css",
    ):
        assert needed in names, needed
    assert not any(n.startswith(("tests/", "examples/", "bench/", "docs/")) for n in names)
    assert not any(n.endswith((".md", "mkdocs.yml")) and "dist-info" not in n for n in names)
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "stratamem = stratamem.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_installed_wheel_passes_the_smoke_test(dist, tmp_path):
    [wheel] = dist.glob("*.whl")
    target = tmp_path / "venv"
    venv.create(target, with_pip=False)
    py = target / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.check_output(
        [str(py), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    ).strip()
    # The dependencies come from the test venv, by a plain path line (its own .pth files stay unprocessed).
    Path(purelib, "test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    install = [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index"]
    done = subprocess.run([*install, str(wheel)], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    smoke = subprocess.run(
        [str(py), "-I", str(ROOT / "tests" / "wheel_smoke.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert "stratamem imported from the venv" in smoke.stdout


def test_the_smoke_test_refuses_the_editable_install(tmp_path):
    """The smoke test really tells a wheel from the source tree: run by the test venv, it fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    smoke = subprocess.run(
        [sys.executable, "-I", str(ROOT / "tests" / "wheel_smoke.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert smoke.returncode != 0
    assert "stratamem imported from the venv" in smoke.stderr
