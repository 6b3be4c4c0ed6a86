"""Search modes and the pieces shared by every backend: exact dense scoring and score fusion."""

from __future__ import annotations

from ..errors import ValidationError

MODES = ("lexical", "semantic", "hybrid")


def check_mode(mode: object) -> str:
    if not isinstance(mode, str) or mode.strip().lower() not in MODES:
        raise ValidationError(f"search mode must be one of {', '.join(MODES)}")
    return mode.strip().lower()
