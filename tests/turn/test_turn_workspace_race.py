"""The workspace jail under a racing attacker, and files that are not files.

A thread keeps exchanging a directory inside the workspace with a symlink to
an outside directory (``renameat2(RENAME_EXCHANGE)``, atomic) while reads and
writes go through that directory: no read may return outside content and no
write may create a file outside, however the swaps fall.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading
from pathlib import Path

import pytest

from stratamem.turn import NotFoundError, PolicyBlockedError, WorkspacePolicy, beneath
from stratamem.turn.errors import TurnError, ValidationError

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchanger():
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]

    def exchange(a: Path, b: Path) -> None:
        if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")

    return exchange


EXCHANGE = _exchanger()


def _race(
    tmp_path: Path, iterations: int, force_walk: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, int]:
    """(outside reads, outside writes) over ``iterations`` reads and writes while swapping."""
    if EXCHANGE is None:
        pytest.skip("renameat2 is not available")
    if force_walk:
        monkeypatch.setattr(beneath, "_available", False)
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "sub").mkdir(parents=True)
    outside.mkdir()
    (workspace / "sub" / "file.txt").write_text("inside")
    (outside / "file.txt").write_text("OUTSIDE")
    (workspace / "swap").symlink_to(outside, target_is_directory=True)
    policy = WorkspacePolicy(workspace)
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            EXCHANGE(workspace / "sub", workspace / "swap")

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    leaked_reads = 0
    try:
        for i in range(iterations):
            try:
                if policy.read_text("sub/file.txt") != "inside":
                    leaked_reads += 1
            except TurnError:
                pass
            try:
                policy.write_text(f"sub/new-{i}.txt", "x")
            except TurnError:
                pass
    finally:
        stop.set()
        thread.join()
    leaked_writes = len([p for p in outside.iterdir() if p.name.startswith("new-")])
    return leaked_reads, leaked_writes


@pytest.mark.parametrize("force_walk", [False, True], ids=["openat2", "walk"])
def test_swapping_a_parent_for_a_symlink_never_escapes(
    tmp_path: Path, force_walk: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _race(tmp_path, 400, force_walk, monkeypatch) == (0, 0)


@pytest.mark.slow
@pytest.mark.parametrize("force_walk", [False, True], ids=["openat2", "walk"])
def test_swapping_race_long(tmp_path: Path, force_walk: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _race(tmp_path, 20_000, force_walk, monkeypatch) == (0, 0)


def test_openat2_is_used_on_linux() -> None:
    if sys.platform.startswith("linux") and os.uname().release.split(".")[0].isdigit():
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
        if (major, minor) >= (5, 6):
            assert beneath.openat2_available() in (True, False)  # probed without raising


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "pipe").__fspath__()
    os.mkfifo(tmp_path / "pipe")
    policy = WorkspacePolicy(tmp_path)
    with pytest.raises(PolicyBlockedError) as info:
        policy.read_bytes("pipe")  # blocked forever before the fix
    assert "not a regular file" in info.value.message
    with pytest.raises(PolicyBlockedError):
        policy.write_bytes("pipe", b"x")


def test_device_is_refused(tmp_path: Path) -> None:
    if not Path("/dev/null").exists():
        pytest.skip("no /dev/null")
    policy = WorkspacePolicy(tmp_path, read_allow=(Path("/dev/null"),))
    with pytest.raises(PolicyBlockedError):
        policy.read_bytes("/dev/null")


@pytest.mark.parametrize("write", [False, True])
def test_overlong_names_are_validation_errors(tmp_path: Path, write: bool) -> None:
    policy = WorkspacePolicy(tmp_path)
    for path in ("a" * 256, f"dir/{'b' * 300}/file.txt", "c/" * 2100):
        with pytest.raises(ValidationError) as info:
            policy.write_text(path, "x") if write else policy.read_text(path)
        assert info.value.code == "VALIDATION_ERROR"
    assert list(tmp_path.iterdir()) == []


def test_name_of_255_bytes_is_fine(tmp_path: Path) -> None:
    policy = WorkspacePolicy(tmp_path)
    policy.write_text("d" * 255, "ok")
    assert policy.read_text("d" * 255) == "ok"


def test_undecodable_path_is_a_validation_error(tmp_path: Path) -> None:
    with pytest.raises((ValidationError, NotFoundError)):
        WorkspacePolicy(tmp_path).read_text("bad-\ud800-name")


def test_walk_fallback_refuses_a_symlinked_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(beneath, "_available", False)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(OSError) as info:
        beneath.open_beneath(tmp_path, ("link", "f.txt"), os.O_WRONLY | os.O_CREAT, make_parents=True)
    assert info.value.errno in (errno.ELOOP, errno.ENOTDIR)
    assert not (tmp_path / "real" / "f.txt").exists()
