"""Errors raised by the turn layer.

Every user-facing failure carries a stable ``code`` so that callers (and
agents reading tool errors) can branch on it without parsing the message,
which is free to improve over time.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "LimitExceededError",
    "NotFoundError",
    "PolicyBlockedError",
    "TurnError",
    "ValidationError",
]


class TurnError(Exception):
    """Base error of the turn layer; ``code`` is part of the public contract."""

    default_code: ClassVar[str] = "TURN_ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ValidationError(TurnError):
    """An argument or setting is malformed."""

    default_code = "VALIDATION_ERROR"


class PolicyBlockedError(TurnError):
    """A policy (workspace confinement, allowlist) refused the operation."""

    default_code = "POLICY_BLOCKED"


class NotFoundError(TurnError):
    """The requested file, session or record does not exist."""

    default_code = "NOT_FOUND"


class LimitExceededError(TurnError):
    """A size bound (attachment bytes, file read bytes) was exceeded."""

    default_code = "LIMIT_EXCEEDED"
