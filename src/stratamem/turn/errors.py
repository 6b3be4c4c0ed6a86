"""Errors raised by the turn layer.

Every user-facing failure carries a stable ``code`` so that callers (and
agents reading tool errors) can branch on it without parsing the message,
which is free to improve over time.
"""

from __future__ import annotations

from typing import ClassVar

from .. import errors as core

__all__ = [
    "LimitExceededError",
    "NotFoundError",
    "PolicyBlockedError",
    "TurnError",
    "TurnStateError",
    "ValidationError",
]


class TurnError(core.StratamemError):
    """Base error of the turn layer; ``code`` is part of the public contract.

    A ``StratamemError``, so tools, the CLI and HTTP map it like any other. A
    turn used out of order or past a bound is the caller's mistake, so the
    turn's own errors exit like a usage error (2); those that are also a core
    error list that class first and exit as it does.
    """

    default_code: ClassVar[str] = "TURN_ERROR"
    exit_code = 2

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code or self.default_code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ValidationError(core.ValidationError, TurnError):
    """An argument or setting is malformed."""

    default_code = "VALIDATION_ERROR"


class PolicyBlockedError(core.PolicyBlocked, TurnError):
    """A policy (workspace confinement, allowlist) refused the operation."""

    default_code = "POLICY_BLOCKED"


class NotFoundError(core.NotFound, TurnError):
    """The requested file, session or record does not exist."""

    default_code = "NOT_FOUND"


class LimitExceededError(TurnError):
    """A size bound (attachment bytes, tool result count, message size) was exceeded."""

    default_code = "LIMIT_EXCEEDED"


class TurnStateError(TurnError):
    """The turn is not in a state that allows the call (e.g. ended twice)."""

    default_code = "TURN_STATE"
