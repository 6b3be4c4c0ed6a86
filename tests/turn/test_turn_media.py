from __future__ import annotations

from pathlib import Path

import pytest

from stratamem.turn import (
    LimitExceededError,
    MediaAttachment,
    MediaKind,
    MediaLimits,
    PolicyBlockedError,
    WorkspacePolicy,
    check_attachment,
    load_attachment,
    media_kind,
)


@pytest.mark.parametrize(
    ("mime", "name", "kind"),
    [
        ("audio/ogg", "voice.bin", MediaKind.AUDIO),
        ("image/png", "x", MediaKind.IMAGE),
        ("VIDEO/MP4", "clip", MediaKind.VIDEO),
        ("image/png", "song.mp3", MediaKind.IMAGE),  # the declared type wins
        (None, "photo.JPG", MediaKind.IMAGE),
        ("application/octet-stream", "talk.m4a", MediaKind.AUDIO),  # generic type: use the extension
        (None, "movie.webm", MediaKind.VIDEO),
        ("text/plain", "notes.txt", MediaKind.UNKNOWN),
        (None, "no_extension", MediaKind.UNKNOWN),
    ],
)
def test_kind(mime: str | None, name: str, kind: MediaKind) -> None:
    assert media_kind(mime, name) is kind
    assert MediaAttachment(name, b"", mime).kind is kind


def test_byte_limit_refused_with_clear_error() -> None:
    attachment = MediaAttachment("big.png", b"x" * 11, "image/png")
    assert check_attachment(attachment, MediaLimits(max_bytes=11)) is attachment
    with pytest.raises(LimitExceededError) as info:
        check_attachment(attachment, MediaLimits(max_bytes=10))
    assert info.value.code == "LIMIT_EXCEEDED"
    assert "big.png" in str(info.value) and "10 bytes" in str(info.value)


def test_load_goes_through_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "cat.png").write_bytes(b"\x89PNG....")
    (tmp_path / "dog.png").write_bytes(b"\x89PNG")
    policy = WorkspacePolicy(workspace)
    loaded = load_attachment("cat.png", policy)
    assert (loaded.file_name, loaded.mime_type, loaded.kind, loaded.size) == (
        "cat.png",
        "image/png",
        MediaKind.IMAGE,
        8,
    )
    with pytest.raises(PolicyBlockedError):
        load_attachment("../dog.png", policy)
    with pytest.raises(LimitExceededError):
        load_attachment("cat.png", policy, MediaLimits(max_bytes=4))
