"""Built-in checks that run before operator rules and cannot be overridden by them.

Pure functions returning a BLOCK ``Decision`` (or ``None`` when the check
passes). They encode the product's own promises — read-only sessions do not
write, poisoned content is not stored, nothing is output below the taint —
so an operator's rule file can add restrictions but never remove these.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..levels import Level
from .model import Action, Decision
from .scanner import ScanMode, describe, scan_all


def read_only_guard(read_only: bool, is_write: bool, tool: str) -> Decision | None:
    if read_only and is_write:
        return Decision(
            Action.BLOCK,
            "read_only",
            f"{tool} is not available: this session is read-only (memories can be read, not changed)",
            "read_only",
        )
    return None


def scanner_guard(mode: ScanMode, texts: Iterable[object]) -> tuple[Decision | None, tuple[str, ...]]:
    """A BLOCK for poisoned content in REJECT mode, and the kinds found (for QUARANTINE)."""
    if mode is ScanMode.OFF:
        return None, ()
    kinds = scan_all(texts)
    if kinds and mode is ScanMode.REJECT:
        return Decision(
            Action.BLOCK, "scanner", describe(kinds), "scanner", detail={"kinds": list(kinds)}
        ), kinds
    return None, kinds


def write_down_guard(taint: Level, target: Level) -> Decision | None:
    """Output to a channel below the session's taint would carry information down."""
    if Level(target) < Level(taint):
        return Decision(
            Action.BLOCK,
            "write_down",
            f"output blocked: the channel is {Level(target).name}, below the session's level {Level(taint).name}",
            "write_down",
        )
    return None
