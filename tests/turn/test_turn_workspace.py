from __future__ import annotations

import os
from pathlib import Path

import pytest

from stratamem.turn import (
    EventBus,
    EventLog,
    LimitExceededError,
    NotFoundError,
    PolicyBlockedError,
    PolicyDecision,
    WorkspacePolicy,
)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "notes.txt").write_text("inside")
    (outside / "secret.txt").write_text("top secret")
    return workspace, outside


def refused(policy: WorkspacePolicy, path: str | Path, *, write: bool = False) -> bool:
    with pytest.raises(PolicyBlockedError) as info:
        if write:
            policy.write_text(path, "pwned")
        else:
            policy.read_text(path)
    assert info.value.code == "POLICY_BLOCKED"
    return True


def test_reads_inside_workspace(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    policy = WorkspacePolicy(workspace)
    assert policy.read_text("notes.txt") == "inside"
    assert policy.read_text(workspace / "notes.txt") == "inside"  # absolute but inside
    assert policy.read_text("sub/../notes.txt") == "inside"  # ".." that stays inside


def test_dotdot_escape_refused(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    policy = WorkspacePolicy(workspace)
    assert refused(policy, "../outside/secret.txt")
    assert refused(policy, "../outside/new.txt", write=True)
    assert not (layout[1] / "new.txt").exists()


def test_absolute_escape_refused(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    policy = WorkspacePolicy(workspace)
    assert refused(policy, outside / "secret.txt")
    assert refused(policy, "/etc/passwd")
    assert refused(policy, outside / "x.txt", write=True)


def test_symlink_escape_refused(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    policy = WorkspacePolicy(workspace)
    assert refused(policy, "link.txt")
    assert refused(policy, "linkdir/secret.txt")
    assert refused(policy, "link.txt", write=True)
    assert refused(policy, "linkdir/new.txt", write=True)
    assert (outside / "secret.txt").read_text() == "top secret"


def test_symlink_inside_workspace_allowed(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    (workspace / "alias.txt").symlink_to(workspace / "notes.txt")
    assert WorkspacePolicy(workspace).read_text("alias.txt") == "inside"


def test_hard_link_refused(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    os.link(outside / "secret.txt", workspace / "hard.txt")
    policy = WorkspacePolicy(workspace)
    assert refused(policy, "hard.txt")
    assert refused(policy, "hard.txt", write=True)
    assert (outside / "secret.txt").read_text() == "top secret"


def test_allowlist_grants_read_not_write(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    policy = WorkspacePolicy(workspace, read_allow=(outside,))
    assert policy.read_text(outside / "secret.txt") == "top secret"
    assert policy.read_text("../outside/secret.txt") == "top secret"
    assert refused(policy, outside / "secret.txt", write=True)
    writer = WorkspacePolicy(workspace, write_allow=(outside,))
    assert writer.write_text(outside / "out.txt", "ok") == (outside / "out.txt").resolve()
    assert refused(writer, outside / "secret.txt")


def test_writes_inside_create_parents(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    policy = WorkspacePolicy(workspace)
    policy.write_text("deep/dir/file.txt", "hello")
    assert (workspace / "deep/dir/file.txt").read_text() == "hello"
    policy.write_text("deep/dir/file.txt", "hi")
    assert (workspace / "deep/dir/file.txt").read_text() == "hi"


def test_reads_are_bounded(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    (workspace / "big.bin").write_bytes(b"x" * 101)
    policy = WorkspacePolicy(workspace, max_read_bytes=100)
    with pytest.raises(LimitExceededError) as info:
        policy.read_bytes("big.bin")
    assert info.value.code == "LIMIT_EXCEEDED"
    assert len(policy.read_bytes("notes.txt")) == 6
    with pytest.raises(LimitExceededError):
        policy.read_bytes("notes.txt", max_bytes=5)


def test_missing_file_not_found(layout: tuple[Path, Path]) -> None:
    with pytest.raises(NotFoundError) as info:
        WorkspacePolicy(layout[0]).read_bytes("nope.txt")
    assert info.value.code == "NOT_FOUND"


def test_directories_and_empty_paths_refused(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    (workspace / "sub").mkdir()
    policy = WorkspacePolicy(workspace)
    assert refused(policy, "sub")
    assert refused(policy, "")
    assert refused(policy, "a\x00b")


def test_decisions_are_observed(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    log = EventLog()
    policy = WorkspacePolicy(workspace, agent_id="agent-1", events=EventBus([log], tracer=None))
    policy.read_text("notes.txt")
    with pytest.raises(PolicyBlockedError):
        policy.read_text("../outside/secret.txt")
    allowed, denied = log.of_type(PolicyDecision)
    assert allowed.allowed and allowed.action == "read" and allowed.agent_id == "agent-1"
    assert not denied.allowed and "outside the workspace" in denied.reason
