"""``stratamem import --format NAME``: other memory stores' files, read into memories.

Each format is one module in this package that defines ``FORMAT`` (its name
on the command line), ``SOURCE`` (``"file"`` or ``"dir"``), ``DESCRIPTION``
and ``read(path, target) -> list[Memory]``. The registry finds them by
scanning the package, so adding a format is adding a module — no shared list
to edit. Readers raise one ``ValidationError`` naming every bad position
(``sources.Problems``); the CLI then imports all or nothing, through the
policy gate, at the agent and level the operator chose.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..errors import ValidationError
from ..models import Memory
from .sources import Target

__all__ = ["Format", "Target", "formats", "get_format"]


@dataclass(frozen=True)
class Format:
    name: str
    source: str  # "file" or "dir"
    description: str
    read: Callable[[Path, Target], list[Memory]]


def _format_of(module: ModuleType) -> Format | None:
    name = getattr(module, "FORMAT", None)
    if not isinstance(name, str):
        return None
    return Format(name, module.SOURCE, module.DESCRIPTION, module.read)


def formats() -> dict[str, Format]:
    """Every importer module in this package, by format name."""
    found: dict[str, Format] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "sources":
            continue
        fmt = _format_of(importlib.import_module(f"{__name__}.{info.name}"))
        if fmt is not None:
            found[fmt.name] = fmt
    return dict(sorted(found.items()))


def get_format(name: str) -> Format:
    known = formats()
    if name not in known:
        raise ValidationError(f"unknown import format {name!r}; one of: {', '.join(known)}")
    return known[name]
