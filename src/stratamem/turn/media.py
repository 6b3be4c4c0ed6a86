"""Media attachments of a turn: classified, bounded, loaded through the workspace.

The kind decides how a runtime forwards an attachment (image block, audio
transcription, ...).  The MIME type wins because it is what the sender
declared; the file extension is the fallback.  A fixed table is used rather
than :mod:`mimetypes`, whose answers depend on the host's configuration.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePath

from .errors import LimitExceededError, ValidationError
from .workspace import WorkspacePolicy

__all__ = [
    "DEFAULT_MAX_ATTACHMENT_BYTES",
    "MediaAttachment",
    "MediaKind",
    "MediaLimits",
    "check_attachment",
    "guess_mime_type",
    "load_attachment",
    "media_kind",
]

DEFAULT_MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024


class MediaKind(StrEnum):
    AUDIO = "audio"
    IMAGE = "image"
    VIDEO = "video"
    UNKNOWN = "unknown"


_MIME_BY_EXTENSION: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".svg": "image/svg+xml",
    ".heic": "image/heic",
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".opus": "audio/opus",
    ".m4a": "audio/mp4",
    ".flac": "audio/flac",
    ".aac": "audio/aac",
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".mov": "video/quicktime",
    ".webm": "video/webm",
    ".mkv": "video/x-matroska",
    ".avi": "video/x-msvideo",
}

_KIND_BY_MAJOR = {"audio": MediaKind.AUDIO, "image": MediaKind.IMAGE, "video": MediaKind.VIDEO}


def guess_mime_type(file_name: str) -> str | None:
    return _MIME_BY_EXTENSION.get(PurePath(file_name).suffix.lower())


def media_kind(mime_type: str | None, file_name: str = "") -> MediaKind:
    """Kind from the MIME type's major part, else from the extension."""
    for candidate in (mime_type, guess_mime_type(file_name)):
        if candidate:
            major = candidate.split("/", 1)[0].strip().lower()
            if major in _KIND_BY_MAJOR:
                return _KIND_BY_MAJOR[major]
    return MediaKind.UNKNOWN


@dataclass(frozen=True, slots=True)
class MediaLimits:
    max_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES

    def __post_init__(self) -> None:
        if self.max_bytes < 0:
            raise ValidationError("MediaLimits.max_bytes must be >= 0")


@dataclass(frozen=True, slots=True)
class MediaAttachment:
    file_name: str
    data: bytes
    mime_type: str | None = None

    @property
    def kind(self) -> MediaKind:
        return media_kind(self.mime_type, self.file_name)

    @property
    def size(self) -> int:
        return len(self.data)


def check_attachment(attachment: MediaAttachment, limits: MediaLimits = MediaLimits()) -> MediaAttachment:
    """Refuse an attachment over the byte limit; return it unchanged otherwise."""
    if attachment.size > limits.max_bytes:
        raise LimitExceededError(
            f"attachment {attachment.file_name!r} is {attachment.size} bytes; the limit is {limits.max_bytes} bytes"
        )
    return attachment


def load_attachment(
    path: str | os.PathLike[str],
    workspace: WorkspacePolicy,
    limits: MediaLimits = MediaLimits(),
    *,
    mime_type: str | None = None,
) -> MediaAttachment:
    """Read a file as an attachment, through the workspace policy.

    The read itself is bounded by the limit (and by the workspace's own read
    limit), so an oversized file is refused without being loaded first.
    """
    data = workspace.read_bytes(path, max_bytes=limits.max_bytes)
    name = PurePath(os.fspath(path)).name
    return check_attachment(MediaAttachment(name, data, mime_type or guess_mime_type(name)), limits)
