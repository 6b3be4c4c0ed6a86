"""Progress for long operator commands (``import``, ``migrate``, ``reindex``): a bar on a terminal only.

A progress bar is drawn on stderr only when stderr is a terminal, so pipes,
logs, ``--json`` consumers and tests see exactly the output they saw before.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

import click

T = TypeVar("T")


def _terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(callable(isatty) and isatty())


def tracked(
    items: Iterable[T], label: str, *, length: int | None = None, stream: TextIO | None = None
) -> Iterator[T]:
    """Yield ``items`` unchanged, advancing a bar on ``stream`` (default stderr) when it is a terminal."""
    stream = stream if stream is not None else sys.stderr
    if not _terminal(stream):
        yield from items
        return
    if length is None and hasattr(items, "__len__"):
        length = len(items)  # type: ignore[arg-type]
    with click.progressbar(items, length=length, label=label, file=stream, show_pos=True) as bar:
        yield from bar


@contextmanager
def reporter(label: str, *, stream: TextIO | None = None) -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback drawing a bar on a terminal; a no-op elsewhere."""
    stream = stream if stream is not None else sys.stderr
    if not _terminal(stream):
        yield lambda done, total: None
        return
    bar: Any = None
    shown = 0

    def progress(done: int, total: int) -> None:
        nonlocal bar, shown
        if bar is None:
            bar = click.progressbar(length=total, label=label, file=stream, show_pos=True)
            bar.__enter__()
        bar.update(max(0, done - shown))
        shown = max(shown, done)

    try:
        yield progress
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
