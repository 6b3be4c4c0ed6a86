"""Opening a file beneath a directory with no window to swap a path component.

Checking a path and then opening it by name loses a race: between the two, a
parent directory can be exchanged for a symlink to somewhere else. Here the
kernel resolves the path relative to an open descriptor of the base directory
in the same call that opens it:

* Linux >= 5.6: one ``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``
  (called through ``ctypes``; Python has no wrapper) — the kernel refuses any
  symlink or ``..`` step out of the base while it resolves;
* elsewhere: a walk, one component at a time, each opened relative to the
  descriptor of its parent with ``O_NOFOLLOW`` (and ``O_DIRECTORY`` for
  parents), so no name is ever looked up twice.

Callers pass a path that is already free of symlinks (``os.path.realpath``
of a checked path): any symlink met here appeared after that check, which is
exactly the race, and the open fails (``ELOOP``/``ENOTDIR``/``EXDEV``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Callable, Sequence

__all__ = ["open_beneath", "openat2_available"]

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
_SYS_OPENAT2 = 437  # the same number on every Linux architecture (unified syscall table)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_syscall: Callable[..., int] | None = None  # libc's syscall(2), once probed
_available: bool | None = None


def _raw_openat2(dir_fd: int, path: str, flags: int, mode: int) -> int:
    how = _OpenHow(flags, mode if flags & os.O_CREAT else 0, _RESOLVE)
    assert _syscall is not None, "openat2_available() probes the syscall first"
    fd = _syscall(_SYS_OPENAT2, dir_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return fd


def openat2_available() -> bool:
    """Whether this process can use ``openat2`` (probed once: old kernels and some sandboxes lack it)."""
    global _syscall, _available
    if _available is None:
        _available = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                libc.syscall.restype = ctypes.c_long
                libc.syscall.argtypes = [
                    ctypes.c_long,
                    ctypes.c_int,
                    ctypes.c_char_p,
                    ctypes.POINTER(_OpenHow),
                    ctypes.c_size_t,
                ]
                _syscall = libc.syscall
                root = os.open("/", _DIR_FLAGS)
                try:
                    os.close(_raw_openat2(root, ".", _DIR_FLAGS, 0))
                    _available = True
                finally:
                    os.close(root)
            except (OSError, AttributeError):
                _available = False
    return _available


def _step(dir_fd: int, name: str, flags: int, mode: int) -> int:
    """Open one component (or, with openat2, a relative path) under ``dir_fd``, never through a symlink."""
    if openat2_available():
        return _raw_openat2(dir_fd, name, flags | _CLOEXEC, mode)
    return os.open(name, flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd)


def open_beneath(
    base: str | os.PathLike[str],
    parts: Sequence[str],
    flags: int,
    mode: int = 0o644,
    *,
    make_parents: bool = False,
) -> int:
    """A descriptor for ``base/parts[0]/.../parts[-1]``, opened without following any symlink.

    ``base`` is trusted (the operator's workspace or grant); ``parts`` are
    plain names (no ``/``, ``.`` or ``..``). With ``make_parents`` missing
    directories are created (0o755) one at a time, each through its parent's
    descriptor. Raises ``OSError`` as ``open`` does.
    """
    if not parts or any(not p or p in (".", "..") or "/" in p for p in parts):
        raise OSError(errno.EINVAL, "not a plain relative path", "/".join(parts))
    base_fd = os.open(base, _DIR_FLAGS)
    if openat2_available() and not make_parents:
        try:
            return _step(base_fd, "/".join(parts), flags, mode)
        finally:
            os.close(base_fd)
    held = [base_fd]
    try:
        for name in parts[:-1]:
            try:
                held.append(_step(held[-1], name, _DIR_FLAGS, 0))
            except FileNotFoundError:
                if not make_parents:
                    raise
                try:
                    os.mkdir(name, 0o755, dir_fd=held[-1])
                except FileExistsError:
                    pass
                held.append(_step(held[-1], name, _DIR_FLAGS, 0))
        return _step(held[-1], parts[-1], flags, mode)
    finally:
        for fd in held:
            os.close(fd)
