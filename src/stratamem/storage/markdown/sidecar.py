"""The sidecar folder ``<dir>/.stratamem``: its confinement and the directory lock.

The sidecar index holds the content of every level, so it must live in the
store directory itself. The folder is opened like every other one, through a
descriptor and never through a link; the files SQLite opens there by name
itself (``index.db`` and its ``-wal``, ``-shm``, ``-journal``) cannot be, so
they are checked before and after it does (``check_sidecar_files``,
``check_open``): a link, a special file or a hard-linked one is a
``StorageError``, never followed. The lock file lives there too.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ...errors import StorageError
from ...private import FILE_MODE
from . import files
from . import format as fmt

SIDECAR_DB = "index.db"
SIDECAR_LOCK = "lock"
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")  # SQLite opens these by name next to the database


def index_path(root: str) -> str:
    """Where the sidecar database of the store at ``root`` lives."""
    return os.path.join(root, fmt.SIDECAR_DIR, SIDECAR_DB)


def _refuse(shown: str, why: str) -> StorageError:
    return StorageError(
        f"refusing {shown}: {why}; a Markdown store opens nothing that resolves outside its directory"
    )


def _check_own_file(info: os.stat_result, shown: str) -> None:
    """A file the store keeps in its sidecar must be a regular file with no second name."""
    if stat.S_ISLNK(info.st_mode):
        raise _refuse(shown, "it is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(shown, "it is not a regular file")
    if info.st_nlink > 1:
        raise _refuse(shown, "it has other hard links, which may lie outside the store")


def open_sidecar(root: str, create: bool = True) -> int:
    """A descriptor of ``<root>/.stratamem`` (made 0700 when missing and ``create``), never through a link.

    A symbolic link or a file in its place is a ``StorageError``.
    """
    root_fd = os.open(root, files.ROOT_FLAGS)
    try:
        return files.open_folder(root_fd, fmt.SIDECAR_DIR, create)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            raise _refuse(
                os.path.join(root, fmt.SIDECAR_DIR), "it is a symbolic link or not a folder"
            ) from None
        raise
    finally:
        os.close(root_fd)


def check_sidecar_files(sidecar_fd: int, shown: str, create: bool = False) -> None:
    """``index.db`` and SQLite's companion files: each absent or a regular file with one link.

    SQLite opens them by name and would follow a link, so they are checked
    through the folder's descriptor before it opens them (``create`` makes an
    empty private ``index.db`` first, so SQLite never creates it by name) and
    again once it has: a swap in between is caught before any content is written.
    """
    if create:
        try:
            fd = os.open(
                SIDECAR_DB, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE, dir_fd=sidecar_fd
            )
        except FileExistsError:
            pass
        else:
            os.fchmod(fd, FILE_MODE)
            os.close(fd)
    for name in (SIDECAR_DB, *(SIDECAR_DB + suffix for suffix in SQLITE_COMPANIONS)):
        try:
            info = os.stat(name, dir_fd=sidecar_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        _check_own_file(info, os.path.join(shown, name))


def _same_folder(path: str, fd: int) -> bool:
    """Whether ``path`` names, itself and not through a link, the folder ``fd`` holds (as SQLite will open it)."""
    try:
        by_name, held = os.lstat(path), os.fstat(fd)
    except OSError:
        return False
    return stat.S_ISDIR(by_name.st_mode) and (by_name.st_dev, by_name.st_ino) == (held.st_dev, held.st_ino)


def check_open(sidecar: str, sidecar_fd: int, create: bool = False) -> None:
    """The open sidecar folder and the files SQLite opens there by name are the store's own (lock held).

    SQLite cannot open them through a descriptor, so they are checked before it
    opens them, right after, and at every scan, before any write.
    """
    try:
        if not _same_folder(sidecar, sidecar_fd):
            raise StorageError(
                f"refusing {sidecar}: it was replaced while the store was open; "
                "a Markdown store opens nothing that resolves outside its directory"
            )
        check_sidecar_files(sidecar_fd, sidecar, create=create)
    except OSError as exc:
        raise StorageError(f"cannot open the Markdown store's index in {sidecar}: {exc}") from exc


def check_sidecar(root: str) -> None:
    """Refuse a store directory whose sidecar folder or database is a link (nothing is created)."""
    try:
        fd = open_sidecar(root, create=False)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"cannot open the Markdown store's index in {root}: {exc}") from exc
    try:
        check_sidecar_files(fd, os.path.join(root, fmt.SIDECAR_DIR))
    finally:
        os.close(fd)


class DirLock:
    """One writer at a time on a store directory: ``flock`` across processes, a lock within this one.

    ``flock`` belongs to the open file, so two stores opened on one directory
    in the same process exclude each other too. Re-entrant per thread. The lock
    file is opened through the sidecar folder's descriptor, never through a link.
    """

    def __init__(self, sidecar_fd: int, shown: str) -> None:
        try:
            fd = os.open(
                SIDECAR_LOCK,
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                FILE_MODE,
                dir_fd=sidecar_fd,
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refuse(os.path.join(shown, SIDECAR_LOCK), "it is a symbolic link") from None
            raise
        try:
            _check_own_file(os.fstat(fd), os.path.join(shown, SIDECAR_LOCK))
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._local = threading.RLock()
        self._depth = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._local:
            if self._depth == 0:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Idempotent: a second close must not close a descriptor number reused by someone else."""
        with self._local:
            fd, self._fd = self._fd, -1
            if fd >= 0:
                os.close(fd)
