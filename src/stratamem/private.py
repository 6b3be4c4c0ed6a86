"""Files and directories only their owner may read: memory databases, exports, tokens, audit anchors.

A store holds RESTRICTED content, so whatever stratamem creates on disk is
made private from the first byte, whatever the process umask: directories 0700,
files 0600 (created with that mode by ``os.open``, then set exactly, before any
content is written — no window in which another user could open them).
Existing files and directories keep the mode their owner chose.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

DIR_MODE = 0o700
FILE_MODE = 0o600


def make_private_dirs(path: str | os.PathLike[str]) -> None:
    """Create ``path`` and its missing parents, each 0700 (``mkdir -p`` would give parents 0755)."""
    missing: list[Path] = []
    current = Path(path)
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:  # another process made it a moment ago
            continue
        os.chmod(directory, DIR_MODE)  # exactly 0700, whatever the umask


def create_private_file(path: str | os.PathLike[str]) -> bool:
    """Create an empty file with mode 0600 if none exists; True when this call created it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return True


@contextmanager
def private_writer(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """Open ``path`` for writing text (truncated), creating it 0600 if it does not exist."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        yield out


def private_sqlite_file(db: str | os.PathLike[str]) -> None:
    """Create a SQLite database file 0600 before ``sqlite3.connect`` opens it (its journals take its mode)."""
    name = os.fspath(db)
    if name and name != ":memory:" and not name.startswith("file:"):
        try:
            create_private_file(name)
        except OSError:  # cannot create it here: sqlite3.connect reports that in its own words
            return


def match_sidecars(database: str) -> None:
    """Give SQLite's -wal/-shm/-journal files no wider a mode than the database file itself.

    SQLite creates them with the database's mode; one left by an older
    version (or another tool) may be wider, and it holds the same content.
    """
    try:
        allowed = os.stat(database).st_mode & 0o777
    except OSError:
        return
    for suffix in ("-wal", "-shm", "-journal"):
        try:
            mode = os.stat(database + suffix).st_mode & 0o777
            if mode & ~allowed:
                os.chmod(database + suffix, mode & allowed)
        except OSError:  # gone in the meantime, or not ours: nothing to tighten
            continue
