"""Shell completion works as the README documents it: through the installed `stratamem` script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "stratamem"


def _complete(tmp_path: Path, mode: str, **extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAMEM_")}
    env.update({"STRATAMEM_HOME": str(tmp_path), "_STRATAMEM_COMPLETE": mode, **extra})
    done = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("shell", "needle"),
    [
        ("bash", "complete -o nosort -F _stratamem_completion stratamem"),
        ("zsh", "#compdef stratamem"),
        ("fish", "complete --no-files --command stratamem"),
    ],
)
def test_documented_completion_scripts(tmp_path, shell, needle):
    assert needle in _complete(tmp_path, f"{shell}_source")


def test_bash_completes_commands_and_choices(tmp_path):
    words = _complete(tmp_path, "bash_complete", COMP_WORDS="stratamem se", COMP_CWORD="1")
    assert words.split() == ["plain,search", "plain,serve", "plain,session"]
    modes = _complete(tmp_path, "bash_complete", COMP_WORDS="stratamem search --mode ", COMP_CWORD="3")
    assert modes.split() == ["plain,lexical", "plain,semantic", "plain,hybrid"]
