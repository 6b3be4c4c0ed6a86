"""The Markdown store's memory files: confined walking, bounded reading, atomic writing.

Nothing here resolves outside the store directory. The walk refuses symbolic
links; every open goes component by component from the store directory with
``O_NOFOLLOW`` relative to the parent's descriptor (``folder_fd``), so a link
planted (or swapped in) anywhere under the directory can never make the store
read or write outside it; a file with a second hard link (which may lie
outside) is never read.

Writes go to a private temporary file in the same folder, are fsynced, renamed
over the old file, and the folder is fsynced: a killed process leaves either
the old file or the new one, never half of one. The store's own writes of
memory files go through ``replace`` (only if the file is still what the store
read); the sidecar folder is ``sidecar``'s.
"""

from __future__ import annotations

import hashlib
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from ...errors import ValidationError
from ...labels import Label
from ...private import DIR_MODE, FILE_MODE
from . import format as fmt

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
TMP_MARK = ".stratamem-tmp-"
ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC  # the store directory itself (already resolved)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

Stamp = tuple[int, int]  # (size, mtime_ns): what the store last read or wrote of a file


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
    labels: dict[str, Label] = field(default_factory=dict)  # "<agent folder>/<label folder>" -> its label

    def label_of(self, rel: str) -> Label:
        """The label of a memory file the walk found (its folder's)."""
        return self.labels["/".join(rel.split("/", 2)[:2])]


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
                    found.problems.append(FileProblem(rel, "memory files belong in a label folder"))
            else:
                try:
                    found.labels[rel] = label_of_folder(root, rel, max_agent_file)
                except ValidationError as exc:
                    found.problems.append(FileProblem(rel, exc.message))
                    continue
                _walk_level(level.path, rel, found)
    return found


def label_of_folder(root: str, folder: str, limit: int = 4096) -> Label:
    """The label ``<agent>/<label folder>`` stands for (long form: as its ``.label`` file names it);
    ``ValidationError`` says why a folder is not a label folder."""
    name = folder.rsplit("/", 1)[-1]
    if not fmt.is_long_label(name):
        return fmt.label_folder(name)
    try:
        named = read_bytes(root, f"{folder}/{fmt.LABEL_FILE}", limit).decode("utf-8")
    except (FileProblem, UnicodeDecodeError):
        raise ValidationError(
            f"a long label folder names its label in {fmt.LABEL_FILE}, which is missing or unreadable"
        ) from None
    return fmt.long_label(name, named)


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


def open_folder(dir_fd: int, name: str, create: bool) -> int:
    """A descriptor of the folder ``name`` in ``dir_fd``, never through a link; made 0700 when missing and ``create``.

    ``OSError`` when it cannot be opened: ``ENOTDIR`` (or ``ELOOP``) when a
    link or something that is not a folder stands in its place.
    """
    made = False
    if create:
        try:
            os.mkdir(name, DIR_MODE, dir_fd=dir_fd)
            made = True
        except FileExistsError:
            pass
    fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    if made:
        try:
            os.fchmod(fd, DIR_MODE)  # exactly 0700, whatever the umask
        except BaseException:
            os.close(fd)
            raise
    return fd


@contextmanager
def folder_fd(root: str, parts: list[str], create: bool) -> Iterator[int]:
    """A descriptor of the folder ``parts`` under ``root``, opened without following any link."""
    fd = os.open(root, ROOT_FLAGS)
    try:
        for part in parts:
            nxt = open_folder(fd, part, create)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def read_bytes(root: str, rel: str, max_bytes: int) -> bytes:
    """A regular file's bytes, at most ``max_bytes``; ``FileProblem`` for links, specials and huge files."""
    parts = rel.split("/")
    try:
        with folder_fd(root, parts[:-1], create=False) as dir_fd:
            fd = os.open(parts[-1], READ_FLAGS, dir_fd=dir_fd)
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


def write_temp(dir_fd: int, name: str, data: bytes) -> tuple[str, os.stat_result]:
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
    with folder_fd(root, parts[:-1], create=True) as dir_fd:
        tmp, info = write_temp(dir_fd, parts[-1], text.encode("utf-8"))
        try:
            os.rename(tmp, parts[-1], src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            os.unlink(tmp, dir_fd=dir_fd)
            raise
        os.fsync(dir_fd)
    return info.st_size, info.st_mtime_ns


def write_agent_file(root: str, folder: str, agent: str) -> None:
    """Long agent folders name their agent in ``.agent`` (written once)."""
    if folder.startswith(fmt.LONG_PREFIX):
        write_atomic(root, f"{folder}/{fmt.AGENT_FILE}", agent + "\n")


def write_label_file(root: str, rel: str, label: Label) -> None:
    """Before a memory file ``rel`` is written: a long label folder names its label in ``.label`` (once)."""
    folder = "/".join(rel.split("/", 2)[:2])
    if fmt.is_long_label(folder.rsplit("/", 1)[-1]) and stat_of(root, f"{folder}/{fmt.LABEL_FILE}") is None:
        write_atomic(root, f"{folder}/{fmt.LABEL_FILE}", label.name + "\n")


def stat_of(root: str, rel: str) -> Stamp | None:
    """(size, mtime_ns) of a file the store would read, looked up without following links; else None."""
    parts = rel.split("/")
    try:
        with folder_fd(root, parts[:-1], create=False) as dir_fd:
            info = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns) if is_ours(info) else None


def is_ours(info: os.stat_result) -> bool:
    """A regular file with no second name: the only kind the store reads (or copies) as a memory file."""
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def sweep_temporaries(root: str) -> None:
    """Delete temporary files a killed writer left behind (only ours: they carry ``TMP_MARK``)."""
    for _, dirnames, filenames, dir_fd in os.fwalk(root, follow_symlinks=False):
        dirnames[:] = [d for d in dirnames if d != fmt.SIDECAR_DIR]
        for name in filenames:
            if TMP_MARK in name:
                with suppress(OSError):
                    os.unlink(name, dir_fd=dir_fd)
