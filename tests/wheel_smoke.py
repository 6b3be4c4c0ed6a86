"""Smoke test of an installed stratamem wheel; run by the venv's own Python in isolated mode (`-I`).

`python -I tests/wheel_smoke.py` from a venv where a built wheel was installed: it proves that the import
resolves to that venv (not to a source tree or an editable install), that the package data shipped inside
the wheel, and that the console script, the demo and a save/search through the Python API work. Shared by
`.ci/run` (a fresh venv with the core dependencies from PyPI) and `tests/test_wheel.py` (offline).
Exits non-zero with a message on the first failure; prints one line per check.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata, resources
from pathlib import Path


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise SystemExit(f"wheel smoke test FAILED: {what}")
    print(f"ok  {what}")


def _run(*argv: str, env: dict[str, str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
    _check(done.returncode == 0, f"stratamem {' '.join(argv[1:])} exits 0 ({done.stderr.strip()[-400:]})")
    return done.stdout


def _missing_extras(script: Path, env: dict[str, str]) -> None:
    """With only the core installed (as in CI), each extra's entry point names its install command."""
    import stratamem as sm
    from stratamem.embed import semantic_available
    from stratamem.extras import installed

    def refused(argv: list[str], extra: str) -> None:
        done = subprocess.run([str(script), *argv], capture_output=True, text=True, env=env, timeout=120)
        hint = f"pip install 'stratamem[{extra}]'"
        _check(done.returncode == 2 and hint in done.stderr, f"`stratamem {' '.join(argv)}` says {hint}")

    def raises(action: Callable[[], object], extra: str, what: str) -> None:
        try:
            action()
        except sm.ValidationError as exc:
            _check(f"stratamem[{extra}]" in str(exc), f"{what} names stratamem[{extra}]")
        else:
            _check(False, f"{what} without the {extra} extra is refused")

    if not installed("server"):
        refused(["serve"], "server")
        refused(["mcp"], "server")
    if not installed("postgres"):
        refused(["--db", "postgresql://me@db.example/app", "list"], "postgres")
    if not installed("client"):
        raises(lambda: sm.Client, "client", "stratamem.Client")
    if not installed("langgraph"):
        raises(
            lambda: importlib.import_module("stratamem.integrations.langgraph"),
            "langgraph",
            "the LangGraph store",
        )
    if not semantic_available():
        raises(
            lambda: sm.open_store(":memory:", search_mode="semantic"), "semantic", "search_mode='semantic'"
        )


def main() -> None:
    import stratamem as sm

    venv = Path(sys.prefix).resolve()
    module = Path(sm.__file__).resolve()
    _check(venv != Path(sys.base_prefix).resolve(), f"running in a venv ({venv})")
    _check(module.is_relative_to(venv), f"stratamem imported from the venv ({module})")
    _check(sm.__version__ == metadata.version("stratamem"), f"__version__ {sm.__version__} = metadata")

    root = resources.files("stratamem")
    for data in (
        "py.typed",
        "embed/data/minilm-tokenizer.json.gz",
        "embed/data/NOTICE",
        "server/static/console/index.html",
        "server/static/console/console.js",
        "server/static/console/console.css",
        "server/static/docs/docs.js",
        "server/static/docs/docs.css",
    ):
        _check(root.joinpath(data).is_file(), f"package data {data}")

    script = Path(sys.executable).parent / ("stratamem.exe" if os.name == "nt" else "stratamem")
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STRATAMEM_", "PYTHON"))}
        env["STRATAMEM_HOME"] = home
        out = _run(str(script), "--version", env=env)
        _check(sm.__version__ in out, f"`stratamem --version` prints {sm.__version__}")
        out = _run(str(script), "demo", env=env)
        _check("CONFIDENTIAL" in out, "`stratamem demo` narrates a session")

        _missing_extras(script, env)

        with sm.open_store(str(Path(home) / "smoke.db")) as store:
            s = store.session("assistant")
            s.save("coffee", "Sam takes coffee black", tags=["preference"])
            hits = s.search("coffee")
            _check([h.memory.key for h in hits] == ["coffee"], "save and search through the Python API")
    print("wheel smoke test passed")


if __name__ == "__main__":
    main()
