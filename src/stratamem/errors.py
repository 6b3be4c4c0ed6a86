"""Errors users see, each with a stable ``code``.

Tools, the CLI and the HTTP layer all map these codes (never the Python class
names) to their own surfaces, so the codes are part of the public contract.
"""

from __future__ import annotations


class StratamemError(Exception):
    code = "STORAGE_ERROR"
    exit_code = 3

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, dict[str, str]]:
        return {"error": {"code": self.code, "message": self.message}}


class ValidationError(StratamemError, ValueError):
    code = "VALIDATION_ERROR"
    exit_code = 2


class NotFound(StratamemError, LookupError):
    code = "NOT_FOUND"
    exit_code = 1


class PolicyBlocked(StratamemError):
    code = "POLICY_BLOCKED"
    exit_code = 4


class ClearanceError(PolicyBlocked):
    """Escalation above the session's clearance; nothing changed."""


class StorageError(StratamemError):
    code = "STORAGE_ERROR"
    exit_code = 3
