"""The classification lattice.

A total order is enough for the product's promise (no read up, no write down),
so levels are an IntEnum: comparisons are the lattice order and the integer is
what storage keeps, which lets a backend filter with a plain ``level <= ?``.
"""

from __future__ import annotations

from enum import IntEnum

from .errors import ValidationError


class Level(IntEnum):
    PUBLIC = 0
    INTERNAL = 1
    CONFIDENTIAL = 2
    RESTRICTED = 3

    @classmethod
    def parse(cls, value: object) -> Level:
        """Accept any case and surrounding spaces; refuse anything else by name."""
        if isinstance(value, Level):
            return value
        if isinstance(value, str):
            name = value.strip().upper()
            if name in cls.__members__:
                return cls[name]
        valid = ", ".join(cls.__members__)
        # never repr() an arbitrary object (a deeply nested one would recurse); cut long strings
        shown = repr(value[:40]) if isinstance(value, str) else f"of type {type(value).__name__}"
        raise ValidationError(f"unknown classification level {shown}; valid levels are {valid}")

    def __str__(self) -> str:
        return self.name


def can_flow_to(src: Level, dst: Level) -> bool:
    """Information may flow from ``src`` to ``dst`` only upwards (or sideways)."""
    return Level(src) <= Level(dst)
