"""Replacing a memory file only if it is still what the store last read; conflict copies of what it cannot merge.

The store's own writes of memory files race with people editing them. A
replace writes and fsyncs the new text first, then checks the file against the
stamp the store read (``Changed`` if it differs, before anything is touched,
so the caller reads the edit and merges it), then renames: only an instant is
left between the check and the rename. An edit landing in that instant goes to
the old file, which is held open across the rename and kept as
``<file>.conflict-<time>`` if it changed; ``Held`` keeps it open past the
write, until the next scan ``release``s it.
"""

from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from . import files
from .files import Stamp

Expect = Stamp | None | Literal["any"]  # None: the file must not exist; "any": replace whatever is there


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
        with files.folder_fd(root, parts[:-1], create=text is not None) as dir_fd:
            return _replace_at(dir_fd, parts, text, expect, hold, keep_old)
    except FileNotFoundError:
        if text is None and expect in (None, "any"):
            return Replaced(None)  # no folder, so no file to remove
        raise


def _replace_at(
    dir_fd: int, parts: list[str], text: str | None, expect: Expect, hold: bool, keep_old: bool
) -> Replaced:
    name, rel = parts[-1], "/".join(parts)
    tmp, info = files.write_temp(dir_fd, name, text.encode("utf-8")) if text is not None else (None, None)
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
        with files.folder_fd(root, parts[:-1], create=True) as dir_fd:
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
        if not files.is_ours(info):
            return None
        fd = os.open(name, files.READ_FLAGS, dir_fd=dir_fd)
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
        return files.is_ours(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
    except FileNotFoundError:
        return False


def _keep_copy(dir_fd: int, parts: list[str], old_fd: int) -> str:
    """Write what the replaced file held (read through ``old_fd``) as ``<file>.conflict-<time>``."""
    chunks, offset = [], 0
    while chunk := os.pread(old_fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    kept = _conflict_name(dir_fd, parts[-1])
    tmp, _ = files.write_temp(dir_fd, kept, b"".join(chunks))
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
