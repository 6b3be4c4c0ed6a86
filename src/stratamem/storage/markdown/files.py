"""The Markdown store's file system access: confined walking, bounded reading, atomic writing, the lock.

Nothing here resolves outside the store directory. The walk refuses symbolic
links; every open goes component by component from the store directory with
``O_NOFOLLOW`` relative to the parent's descriptor, so a link planted (or
swapped in) anywhere under the directory can never make the store read or
write outside it; a file with a second hard link (which may lie outside) is
never read. The sidecar folder ``.stratamem`` is opened the same way, and the
files SQLite opens there by name itself (``index.db`` and its ``-wal``,
``-shm``, ``-journal``) are checked before and after it does (``open_sidecar``,
``check_sidecar_files``): a link, a special file or a hard-linked one is a
``StorageError``, never followed.

Writes go to a private temporary file in the same folder, are fsynced, renamed
over the old file, and the folder is fsynced: a killed process leaves either
the old file or the new one, never half of one. The store's own writes use
``replace``: the file is replaced only if it is still what the store last read,
so a hand edit that landed meanwhile is merged instead of overwritten.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import stat
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from ...errors import StorageError
from ...levels import Level
from ...private import DIR_MODE, FILE_MODE
from . import format as fmt

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
TMP_MARK = ".stratamem-tmp-"
SIDECAR_DIR = ".stratamem"
SIDECAR_DB = "index.db"
SIDECAR_LOCK = "lock"
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")  # SQLite opens these by name next to the database
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

Stamp = tuple[int, int]  # (size, mtime_ns): what the store last read or wrote of a file
Expect = Stamp | None | Literal["any"]  # None: the file must not exist; "any": replace whatever is there


class FileProblem(Exception):
    """A file or folder the store will not read; ``line`` when the problem has one."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.reason = path, line, message

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.path, "line": self.line, "error": self.reason}


@dataclass
class Walk:
    """What a walk found: memory files with (size, mtime_ns), and what it refused."""

    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    problems: list[FileProblem] = field(default_factory=list)
    agent_names: dict[str, str] = field(default_factory=dict)  # agent folder -> agent id


def _entries(path: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def walk(root: str, max_agent_file: int = 4096) -> Walk:
    """Every memory file under ``root`` by the layout of ``format``; hidden names are skipped."""
    found = Walk()
    for agent in _entries(root):
        if agent.name.startswith("."):
            continue
        if agent.is_symlink():
            found.problems.append(FileProblem(agent.name, "symbolic link refused"))
            continue
        if not agent.is_dir(follow_symlinks=False):
            continue
        name = agent_name(root, agent.name, max_agent_file)
        if name is None:
            found.problems.append(
                FileProblem(agent.name, "folder name is not an encoded agent id (see README)")
            )
            continue
        found.agent_names[agent.name] = name
        for level in _entries(agent.path):
            rel = f"{agent.name}/{level.name}"
            if level.name.startswith("."):
                continue
            if level.is_symlink():
                found.problems.append(FileProblem(rel, "symbolic link refused"))
            elif not level.is_dir(follow_symlinks=False):
                if level.name.endswith(".md"):
                    found.problems.append(FileProblem(rel, "memory files belong in a level folder"))
            elif level.name not in Level.__members__:
                found.problems.append(
                    FileProblem(rel, f"unknown level folder; levels are {', '.join(Level.__members__)}")
                )
            else:
                _walk_level(level.path, rel, found)
    return found


def _walk_level(path: str, rel: str, found: Walk) -> None:
    for entry in _entries(path):
        sub = f"{rel}/{entry.name}"
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            found.problems.append(FileProblem(sub, "symbolic link refused"))
        elif entry.is_dir(follow_symlinks=False) and entry.name == fmt.DAILY_DIR:
            for day in _entries(entry.path):
                day_rel = f"{sub}/{day.name}"
                if day.name.startswith(".") or not day.name.endswith(".md"):
                    continue
                if day.is_symlink():
                    found.problems.append(FileProblem(day_rel, "symbolic link refused"))
                elif day.is_file(follow_symlinks=False):
                    _record(day, day_rel, found)
        elif entry.is_file(follow_symlinks=False) and entry.name.endswith(".md"):
            _record(entry, sub, found)


def _record(entry: os.DirEntry[str], rel: str, found: Walk) -> None:
    try:
        fmt.place_of(rel)
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        found.problems.append(FileProblem(rel, str(exc)))
        return
    st = entry.stat(follow_symlinks=False)
    found.files[rel] = (st.st_size, st.st_mtime_ns)


def agent_name(root: str, folder: str, limit: int = 4096) -> str | None:
    """The agent id an agent folder stands for (long names: its ``.agent`` file), None if it is not one."""
    if not folder.startswith(fmt.LONG_PREFIX):
        return fmt.decode_segment(folder)
    try:
        name = read_bytes(root, f"{folder}/{fmt.AGENT_FILE}", limit).decode("utf-8").strip()
    except (FileProblem, UnicodeDecodeError):
        return None
    return name if name and fmt.encode_segment(name) == folder else None


@contextmanager
def _parent_fd(root: str, parts: list[str], create: bool) -> Iterator[int]:
    """A descriptor of the folder ``parts`` under ``root``, opened without following any link."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts:
            made = False
            if create:
                try:
                    os.mkdir(part, DIR_MODE, dir_fd=fd)
                    made = True
                except FileExistsError:
                    pass
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
            if made:
                os.fchmod(fd, DIR_MODE)  # exactly 0700, whatever the umask
        yield fd
    finally:
        os.close(fd)


def read_bytes(root: str, rel: str, max_bytes: int) -> bytes:
    """A regular file's bytes, at most ``max_bytes``; ``FileProblem`` for links, specials and huge files."""
    parts = rel.split("/")
    try:
        with _parent_fd(root, parts[:-1], create=False) as dir_fd:
            fd = os.open(parts[-1], _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise FileProblem(rel, "file disappeared while being read") from None
    except OSError as exc:
        raise FileProblem(rel, f"cannot open ({exc.strerror}; symbolic links are refused)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(rel, "not a regular file")
        if info.st_nlink > 1:
            raise FileProblem(rel, "file has other hard links, which may lie outside the store; refused")
        if info.st_size > max_bytes:
            raise FileProblem(rel, f"file is {info.st_size} bytes; the limit is {max_bytes}")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > max_bytes:
                raise FileProblem(rel, f"file grew past the limit of {max_bytes} bytes while being read")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(root: str, rel: str, max_bytes: int) -> tuple[str, str]:
    """(text, sha256) of a memory file; non-UTF-8 is a ``FileProblem`` naming the line."""
    data = read_bytes(root, rel, max_bytes)
    digest = hashlib.sha256(data).hexdigest()
    try:
        return data.decode("utf-8"), digest
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FileProblem(rel, f"not UTF-8 text (byte {exc.start})", line) from None


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write_temp(dir_fd: int, name: str, data: bytes) -> tuple[str, os.stat_result]:
    """A new private temporary file next to ``name`` holding ``data``, fsynced: (its name, its stat)."""
    tmp = f".{name}{TMP_MARK}{uuid.uuid4().hex}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE, dir_fd=dir_fd)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        info = os.fstat(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    return tmp, info


def write_atomic(root: str, rel: str, text: str) -> tuple[int, int]:
    """Replace ``rel`` with ``text`` (0600, folders 0700) atomically and durably; returns (size, mtime_ns)."""
    parts = rel.split("/")
    with _parent_fd(root, parts[:-1], create=True) as dir_fd:
        tmp, info = _write_temp(dir_fd, parts[-1], text.encode("utf-8"))
        try:
            os.rename(tmp, parts[-1], src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            os.unlink(tmp, dir_fd=dir_fd)
            raise
        os.fsync(dir_fd)
    return info.st_size, info.st_mtime_ns


class Changed(Exception):
    """The file is no longer what the store last read (edited by hand meanwhile): read it again first."""

    def __init__(self, rel: str) -> None:
        super().__init__(f"{rel} changed while the store was writing it")
        self.rel = rel


@dataclass(frozen=True)
class Held:
    """A file a replace took out of place, still open: an editor may have opened it just before."""

    rel: str
    fd: int
    stamp: Stamp  # as it was right after the replace


@dataclass(frozen=True)
class Replaced:
    """What ``replace`` did: the new file's stamp (None once removed), conflict copies kept, the old file."""

    stamp: Stamp | None
    kept: tuple[str, ...] = ()
    old: Held | None = None  # only with ``hold``; the caller ``release``s it


def replace(
    root: str, rel: str, text: str | None, expect: Expect, *, hold: bool = False, keep_old: bool = False
) -> Replaced:
    """Replace ``rel`` with ``text`` (None: remove it), but only if it is still what the store last saw.

    ``expect`` is the stamp the caller read (None: no file). If the file differs,
    ``Changed`` is raised before anything is touched, so the caller can read the
    edit and merge it — the slow part (writing and fsyncing the new text) is
    done before this check, so only an instant is left between it and the
    rename. ``keep_old`` first copies the file being replaced to
    ``<file>.conflict-<time>`` (a version the store cannot merge); the name
    never goes missing meanwhile, so an editor appending cannot create a file
    the rename would then drop. An edit landing in that instant goes to the old
    file, which is held open across the rename: if it changed, its text is kept
    as a conflict copy too. With ``hold`` the old file stays open
    (``Replaced.old``) until the caller ``release``s it, so an editor that
    opened it just before the rename and writes a moment later is caught as well.
    """
    parts = rel.split("/")
    try:
        with _parent_fd(root, parts[:-1], create=text is not None) as dir_fd:
            return _replace_at(dir_fd, parts, text, expect, hold, keep_old)
    except FileNotFoundError:
        if text is None and expect in (None, "any"):
            return Replaced(None)  # no folder, so no file to remove
        raise


def _replace_at(
    dir_fd: int, parts: list[str], text: str | None, expect: Expect, hold: bool, keep_old: bool
) -> Replaced:
    name, rel = parts[-1], "/".join(parts)
    tmp, info = _write_temp(dir_fd, name, text.encode("utf-8")) if text is not None else (None, None)
    stamp = (info.st_size, info.st_mtime_ns) if info is not None else None
    old_fd = None
    try:
        while True:
            old_fd = _open_current(dir_fd, name)
            before = _stamp_of(old_fd) if old_fd is not None else None
            if expect != "any" and before != expect:
                raise Changed(rel)
            kept = [_keep_copy(dir_fd, parts, old_fd)] if keep_old and old_fd is not None else []
            try:
                _swap(dir_fd, tmp, name, rel, replacing=old_fd is not None)
                break
            except Changed:
                if expect != "any":
                    raise
                if old_fd is not None:  # a file appeared this instant: look again
                    os.close(old_fd)
                    old_fd = None
        tmp = None
        os.fsync(dir_fd)
        if old_fd is None:
            return Replaced(stamp, tuple(kept))
        if _stamp_of(old_fd) != before:
            kept.append(_keep_copy(dir_fd, parts, old_fd))
        elif hold and before is not None:
            held, old_fd = Held(rel, old_fd, before), None
            return Replaced(stamp, tuple(kept), held)
        return Replaced(stamp, tuple(kept))
    finally:
        if old_fd is not None:
            os.close(old_fd)
        if tmp is not None:
            with suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)


def release(root: str, held: Held) -> str | None:
    """Close a file ``replace`` held; what was written to it since is first kept as a conflict copy."""
    try:
        if _stamp_of(held.fd) == held.stamp:
            return None
        parts = held.rel.split("/")
        with _parent_fd(root, parts[:-1], create=True) as dir_fd:
            return _keep_copy(dir_fd, parts, held.fd)
    finally:
        os.close(held.fd)


def _stamp_of(fd: int) -> Stamp:
    info = os.fstat(fd)
    return info.st_size, info.st_mtime_ns


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _open_current(dir_fd: int, name: str) -> int | None:
    """A descriptor of the file ``name`` now is; None if there is none, or nothing the store would read."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if not _ours(info):
            return None
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, OSError):
        return None
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):  # swapped between the two calls
        os.close(fd)
        return None
    return fd


def _swap(dir_fd: int, tmp: str | None, name: str, rel: str, replacing: bool) -> None:
    """Put ``tmp`` in place of ``name`` (or remove ``name`` when ``tmp`` is None)."""
    if tmp is None:
        with suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
        return
    if replacing or (_exists(dir_fd, name) and not _ours_at(dir_fd, name)):  # a link or special: replaced
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    # No file yet: link, which never replaces, so a file an editor created this instant is not overwritten.
    try:
        os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except FileExistsError:
        raise Changed(rel) from None
    except OSError:  # a file system without hard links: rename, after looking once more
        if _exists(dir_fd, name):
            raise Changed(rel) from None
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    os.unlink(tmp, dir_fd=dir_fd)


def _ours_at(dir_fd: int, name: str) -> bool:
    try:
        return _ours(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
    except FileNotFoundError:
        return False


def _keep_copy(dir_fd: int, parts: list[str], old_fd: int) -> str:
    """Write what the replaced file held (read through ``old_fd``) as ``<file>.conflict-<time>``."""
    chunks, offset = [], 0
    while chunk := os.pread(old_fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    kept = _conflict_name(dir_fd, parts[-1])
    tmp, _ = _write_temp(dir_fd, kept, b"".join(chunks))
    os.rename(tmp, kept, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    return "/".join([*parts[:-1], kept])


def _conflict_name(dir_fd: int, name: str) -> str:
    """``<name>.conflict-<time>``, with ``-2``, ``-3``... if one was kept in the same microsecond."""
    base = f"{name}.conflict-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}"
    kept, n = base, 1
    while _exists(dir_fd, kept):
        n += 1
        kept = f"{base}-{n}"
    return kept


def write_agent_file(root: str, folder: str, agent: str) -> None:
    """Long agent folders name their agent in ``.agent`` (written once)."""
    if folder.startswith(fmt.LONG_PREFIX):
        write_atomic(root, f"{folder}/{fmt.AGENT_FILE}", agent + "\n")


def stat_of(root: str, rel: str) -> Stamp | None:
    """(size, mtime_ns) of a file the store would read, looked up without following links; else None."""
    parts = rel.split("/")
    try:
        with _parent_fd(root, parts[:-1], create=False) as dir_fd:
            info = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns) if _ours(info) else None


def _ours(info: os.stat_result) -> bool:
    """A regular file with no second name: the only kind the store reads (or copies) as a memory file."""
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def sweep_temporaries(root: str) -> None:
    """Delete temporary files a killed writer left behind (only ours: they carry ``TMP_MARK``)."""
    for _, dirnames, filenames, dir_fd in os.fwalk(root, follow_symlinks=False):
        dirnames[:] = [d for d in dirnames if d != SIDECAR_DIR]
        for name in filenames:
            if TMP_MARK in name:
                with suppress(OSError):
                    os.unlink(name, dir_fd=dir_fd)


# --------------------------------------------------------------------------- the sidecar folder


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

    A symbolic link or a file in its place is a ``StorageError``: the index holds
    the content of every level, so it must live in the store directory itself.
    """
    shown = os.path.join(root, SIDECAR_DIR)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        made = False
        if create:
            try:
                os.mkdir(SIDECAR_DIR, DIR_MODE, dir_fd=root_fd)
                made = True
            except FileExistsError:
                pass
        try:
            fd = os.open(SIDECAR_DIR, _DIR_FLAGS, dir_fd=root_fd)
        except FileNotFoundError:
            raise
        except OSError:
            raise _refuse(shown, "it is a symbolic link or not a folder") from None
    finally:
        os.close(root_fd)
    if made:
        os.fchmod(fd, DIR_MODE)  # exactly 0700, whatever the umask
    return fd


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


def same_folder(path: str, fd: int) -> bool:
    """Whether ``path`` names, itself and not through a link, the folder ``fd`` holds (as SQLite will open it)."""
    try:
        by_name, held = os.lstat(path), os.fstat(fd)
    except OSError:
        return False
    return stat.S_ISDIR(by_name.st_mode) and (by_name.st_dev, by_name.st_ino) == (held.st_dev, held.st_ino)


def check_sidecar(root: str) -> None:
    """Refuse a store directory whose sidecar folder or database is a link (nothing is created)."""
    try:
        fd = open_sidecar(root, create=False)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"cannot open the Markdown store's index in {root}: {exc}") from exc
    try:
        check_sidecar_files(fd, os.path.join(root, SIDECAR_DIR))
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
