"""Confining an agent's file access to its workspace.

Paths come from the model, which can be talked into anything, so every path
is resolved the way the OS will resolve it (``..``, symlinks, absolute
paths) and then compared against the workspace and the allowlist.  Hard
links cannot be resolved at all -- a second name for an outside file looks
like an ordinary file -- so any file with more than one link is refused.

Files are opened with ``O_NOFOLLOW`` and checked again through the open
descriptor, which narrows (but, short of ``openat2``, cannot close) the
window for swapping a path component between the check and the open.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from .errors import LimitExceededError, NotFoundError, PolicyBlockedError, ValidationError
from .observe import EventBus, PolicyDecision, emit

__all__ = ["DEFAULT_MAX_READ_BYTES", "WorkspacePolicy"]

DEFAULT_MAX_READ_BYTES = 10 * 1024 * 1024
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


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
        raw = os.fspath(path)
        if not raw or "\x00" in raw:
            self._refuse(action, raw, "empty path or NUL byte in path")
        candidate = Path(os.path.expanduser(raw))
        real = _real(candidate if candidate.is_absolute() else self.root / candidate)
        if not self._granted(real, write=write):
            self._refuse(action, raw, f"resolves outside the workspace to {real}")
        return real

    def _granted(self, real: Path, *, write: bool) -> bool:
        grants = (self.root, *(self.write_allow if write else self.read_allow))
        return any(real.is_relative_to(grant) for grant in grants)

    def _refuse(self, action: str, target: str, reason: str) -> NoReturn:
        emit(
            self.events,
            PolicyDecision(action=action, target=target, allowed=False, reason=reason, agent_id=self.agent_id),
        )
        raise PolicyBlockedError(f"{action} of {target!r} refused: {reason}")

    def _allow(self, action: str, target: Path) -> None:
        emit(self.events, PolicyDecision(action=action, target=str(target), allowed=True, agent_id=self.agent_id))

    # -- file access ---------------------------------------------------------

    def read_bytes(self, path: str | os.PathLike[str], *, max_bytes: int | None = None) -> bytes:
        """Read a file inside the policy, refusing files over ``max_bytes``."""
        limit = self.max_read_bytes if max_bytes is None else min(max_bytes, self.max_read_bytes)
        real = self.resolve(path)
        try:
            fd = os.open(real, os.O_RDONLY | _O_NOFOLLOW | _O_BINARY)
        except FileNotFoundError:
            raise NotFoundError(f"no such file: {os.fspath(path)!r}") from None
        except OSError as exc:
            self._refuse("read", os.fspath(path), f"cannot open safely ({exc.strerror})")
        self._check_opened(fd, real, "read", os.fspath(path))
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise LimitExceededError(f"{os.fspath(path)!r} is larger than the {limit}-byte read limit")
        self._allow("read", real)
        return data

    def read_text(self, path: str | os.PathLike[str], *, max_bytes: int | None = None, encoding: str = "utf-8") -> str:
        return self.read_bytes(path, max_bytes=max_bytes).decode(encoding, errors="replace")

    def write_bytes(self, path: str | os.PathLike[str], data: bytes) -> Path:
        """Create or replace a file inside the policy; parents are created."""
        real = self.resolve(path, write=True)
        real.parent.mkdir(parents=True, exist_ok=True)
        if _real(real.parent) != real.parent:  # a parent was swapped for a link meanwhile
            self._refuse("write", os.fspath(path), "a parent directory changed while writing")
        # No O_TRUNC: a hard-linked file must be refused before it is emptied.
        try:
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | _O_NOFOLLOW | _O_BINARY, 0o644)
        except OSError as exc:
            self._refuse("write", os.fspath(path), f"cannot open safely ({exc.strerror})")
        self._check_opened(fd, real, "write", os.fspath(path))
        with os.fdopen(fd, "wb") as handle:
            handle.truncate(0)
            handle.write(data)
        self._allow("write", real)
        return real

    def write_text(self, path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> Path:
        return self.write_bytes(path, text.encode(encoding))

    def _check_opened(self, fd: int, real: Path, action: str, target: str) -> None:
        """Check what was actually opened; closes ``fd`` when refusing."""
        info = os.fstat(fd)
        reason = ""
        if not stat.S_ISREG(info.st_mode):
            reason = "not a regular file"
        elif info.st_nlink > 1:
            reason = "file has other hard links, which may lie outside the workspace"
        elif not _same_file(info, real):
            reason = "file changed while it was being opened"
        if reason:
            os.close(fd)
            self._refuse(action, target, reason)


def _same_file(info: os.stat_result, path: Path) -> bool:
    try:
        return os.path.samestat(info, os.stat(path, follow_symlinks=False))
    except OSError:
        return False
