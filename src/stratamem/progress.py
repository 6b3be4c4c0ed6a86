"""Progress for long operator commands (``import``, ``migrate``): a bar on a terminal, silence otherwise.

A progress bar is drawn on stderr only when stderr is a terminal, so pipes,
logs, ``--json`` consumers and tests see exactly the output they saw before.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TextIO, TypeVar

import click

T = TypeVar("T")


def tracked(
    items: Iterable[T], label: str, *, length: int | None = None, stream: TextIO | None = None
) -> Iterator[T]:
    """Yield ``items`` unchanged, advancing a bar on ``stream`` (default stderr) when it is a terminal."""
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()):
        yield from items
        return
    if length is None and hasattr(items, "__len__"):
        length = len(items)  # type: ignore[arg-type]
    with click.progressbar(items, length=length, label=label, file=stream, show_pos=True) as bar:
        yield from bar
