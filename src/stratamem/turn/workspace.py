"""Confining an agent's file access to its workspace.

Paths come from the model, which can be talked into anything, so every path
is resolved the way the OS will resolve it (``..``, symlinks, absolute
paths) and then compared against the workspace and the allowlist.  Hard
links cannot be resolved at all -- a second name for an outside file looks
like an ordinary file -- so any file with more than one link is refused.

The checked path is then opened in one step beneath the grant it lies in
(``beneath.open_beneath``: ``openat2`` with ``RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS``, or a walk of ``O_NOFOLLOW`` directory descriptors), so
swapping a parent directory for a symlink after the check makes the open
fail instead of leading outside. FIFOs and devices are opened non-blocking
and refused as not regular files; over-long names are a ``ValidationError``
(code ``VALIDATION_ERROR``) rather than a raw ``OSError``.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from .beneath import open_beneath
from .errors import LimitExceededError, NotFoundError, PolicyBlockedError, ValidationError
from .observe import EventBus, PolicyDecision, emit

__all__ = ["DEFAULT_MAX_READ_BYTES", "WorkspacePolicy"]

DEFAULT_MAX_READ_BYTES = 10 * 1024 * 1024
_O_BINARY = getattr(os, "O_BINARY", 0)
_NAME_MAX = 255  # bytes in one path component (Linux, macOS)
_PATH_MAX = 4096  # bytes in a whole path, NUL included


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.expanduser(path)))


@dataclass(frozen=True)
class WorkspacePolicy:
    """Where one agent may read and write.

    ``read_allow`` and ``write_allow`` are extra directories (or files)
    outside the workspace that are explicitly granted; a write grant does
    not imply a read grant.
    """

    root: Path
    read_allow: tuple[Path, ...] = ()
    write_allow: tuple[Path, ...] = ()
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES
    agent_id: str = ""
    events: EventBus | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_read_bytes < 0:
            raise ValidationError("max_read_bytes must be >= 0")
        object.__setattr__(self, "root", _real(self.root))
        object.__setattr__(self, "read_allow", tuple(_real(p) for p in self.read_allow))
        object.__setattr__(self, "write_allow", tuple(_real(p) for p in self.write_allow))

    # -- decisions -----------------------------------------------------------

    def resolve(self, path: str | os.PathLike[str], *, write: bool = False) -> Path:
        """The real path behind ``path``, or :class:`PolicyBlockedError`.

        Relative paths are taken from the workspace root, never from the
        process's working directory.
        """
        action = "write" if write else "read"
        raw = _shown(path)
        if not raw or "\x00" in raw:
            self._refuse(action, raw, "empty path or NUL byte in path")
        _check_length(raw)
        candidate = Path(os.path.expanduser(raw))
        try:
            real = _real(candidate if candidate.is_absolute() else self.root / candidate)
        except OSError as exc:  # a component changed while it was being resolved
            self._refuse(action, raw, f"cannot resolve ({exc.strerror})")
        if not self._granted(real, write=write):
            self._refuse(action, raw, f"resolves outside the workspace to {real}")
        return real

    def _granted(self, real: Path, *, write: bool) -> bool:
        grants = (self.root, *(self.write_allow if write else self.read_allow))
        return any(real.is_relative_to(grant) for grant in grants)

    def _refuse(self, action: str, target: str, reason: str) -> NoReturn:
        emit(
            self.events,
            PolicyDecision(
                action=action, target=target, allowed=False, reason=reason, agent_id=self.agent_id
            ),
        )
        raise PolicyBlockedError(f"{action} of {target!r} refused: {reason}")

    def _allow(self, action: str, target: Path) -> None:
        emit(
            self.events,
            PolicyDecision(action=action, target=str(target), allowed=True, agent_id=self.agent_id),
        )

    # -- file access ---------------------------------------------------------

    def read_bytes(self, path: str | os.PathLike[str], *, max_bytes: int | None = None) -> bytes:
        """Read a file inside the policy, refusing files over ``max_bytes``."""
        limit = self.max_read_bytes if max_bytes is None else min(max_bytes, self.max_read_bytes)
        target = _shown(path)
        real = self.resolve(path)
        fd = self._open(real, target, "read", os.O_RDONLY | os.O_NONBLOCK | _O_BINARY)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise LimitExceededError(f"{target!r} is larger than the {limit}-byte read limit")
        self._allow("read", real)
        return data

    def read_text(
        self, path: str | os.PathLike[str], *, max_bytes: int | None = None, encoding: str = "utf-8"
    ) -> str:
        return self.read_bytes(path, max_bytes=max_bytes).decode(encoding, errors="replace")

    def write_bytes(self, path: str | os.PathLike[str], data: bytes) -> Path:
        """Create or replace a file inside the policy; parents are created."""
        real = self.resolve(path, write=True)
        # No O_TRUNC: a hard-linked file must be refused before it is emptied.
        fd = self._open(real, _shown(path), "write", os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | _O_BINARY)
        with os.fdopen(fd, "wb") as handle:
            handle.truncate(0)
            handle.write(data)
        self._allow("write", real)
        return real

    def write_text(self, path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> Path:
        return self.write_bytes(path, text.encode(encoding))

    def _open(self, real: Path, target: str, action: str, flags: int) -> int:
        """Open ``real`` beneath the grant that holds it, in one step, and check what was opened.

        ``real`` has no symlinks (``resolve``); ``open_beneath`` refuses any it
        meets, so a component swapped for a link after the check fails the
        open instead of leading outside. ``O_NONBLOCK`` keeps a FIFO or device
        from blocking the open; they are then refused as not regular files.
        """
        base, parts = self._anchor(real, write=action == "write")
        try:
            fd = open_beneath(base, parts, flags, 0o644, make_parents=action == "write")
        except FileNotFoundError:
            if action == "write":
                self._refuse(action, target, "a parent directory vanished while writing")
            raise NotFoundError(f"no such file: {target!r}") from None
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise ValidationError(f"path too long: {target[:80]!r}...") from None
            if exc.errno in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
                self._refuse(action, target, "a path component is, or became, a link or not a directory")
            if exc.errno == errno.ENXIO:
                self._refuse(action, target, "not a regular file")
            self._refuse(action, target, f"cannot open safely ({exc.strerror})")
        info = os.fstat(fd)
        reason = ""
        if not stat.S_ISREG(info.st_mode):
            reason = "not a regular file"
        elif info.st_nlink > 1:
            reason = "file has other hard links, which may lie outside the workspace"
        if reason:
            os.close(fd)
            self._refuse(action, target, reason)
        return fd

    def _anchor(self, real: Path, *, write: bool) -> tuple[Path, tuple[str, ...]]:
        """The grant directory ``real`` lies in and the names leading from it to ``real``."""
        grants = (self.root, *(self.write_allow if write else self.read_allow))
        grant = next(g for g in grants if real.is_relative_to(g))
        if real == grant:  # a file granted by name, or a grant directory itself
            return real.parent, (real.name,) if real.name else ()
        return grant, real.relative_to(grant).parts


def _shown(path: str | os.PathLike[str]) -> str:
    """The path as given, printable in messages (never raises on odd bytes)."""
    raw = os.fspath(path)
    return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")


def _check_length(raw: str) -> None:
    """Refuse names the OS would reject with a raw OSError, with a stable code instead."""
    try:
        encoded = os.fsencode(raw)
    except UnicodeError:
        raise ValidationError("path is not valid in the file system's encoding") from None
    if len(encoded) >= _PATH_MAX or any(len(part) > _NAME_MAX for part in encoded.split(b"/")):
        raise ValidationError(
            f"path too long: a name may have at most {_NAME_MAX} bytes and a path {_PATH_MAX - 1}",
        )
