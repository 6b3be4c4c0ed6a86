"""The Markdown backend's modules each hold one concept and stay readable: none over 600 lines."""

from __future__ import annotations

from pathlib import Path

import stratamem

PACKAGE = Path(stratamem.__file__).parent / "storage" / "markdown"
LIMIT = 600


def test_no_markdown_backend_module_is_over_the_line_limit():
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in PACKAGE.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > LIMIT} == {}
