"""Every name a module lists in ``__all__`` exists, so ``from stratamem.x import *`` never fails.

``tools.visibility`` once listed ``shown_memories`` after the function was removed: a star import
raised ``AttributeError``.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import stratamem


def _modules() -> list[str]:
    found = pkgutil.walk_packages(stratamem.__path__, "stratamem.")
    return sorted(m.name for m in found if not m.name.endswith("__main__"))  # that one runs the CLI


@pytest.mark.parametrize("name", _modules())
def test_every_name_in_all_exists(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # an optional extra that is not installed here
        pytest.skip(f"{name}: {exc}")
    missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert missing == []


def test_star_import_of_tool_visibility() -> None:
    namespace: dict[str, object] = {}
    exec("from stratamem.tools.visibility import *", namespace)
    assert "shown_hits" in namespace
