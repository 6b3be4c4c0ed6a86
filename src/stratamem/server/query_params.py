"""The one reader of query strings for every HTTP route (REST, the turn API, the console).

A route declares the parameters it takes, each a :class:`Count` (an integer in a stated range) or a
:class:`Text`; :func:`read_query` refuses, naming the parameter, anything else: a name the route does not
take (``?q=`` for ``query``), a name given twice, a count that is not an integer or is out of range. Nothing
is clamped or ignored in silence, as the command line refuses the same values (exit 2). The OpenAPI
document states the same ranges (``Count.schema``; a test compares the two).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import QueryParams

from ..errors import ValidationError

_INTEGER = re.compile(r"-?[0-9]{1,18}")
MAX_TEXT_CHARS = 1000
#: the largest sequence number or position a cursor may name
MAX_POSITION = 2**62 - 1


@dataclass(frozen=True, slots=True)
class Count:
    """An integer from ``low`` to ``high``; ``default`` when the parameter is absent."""

    low: int
    high: int
    default: int | None = None

    def read(self, name: str, raw: str) -> int:
        if not (raw.isascii() and _INTEGER.fullmatch(raw)) or not self.low <= int(raw) <= self.high:
            raise ValidationError(
                f"{name} must be an integer from {self.low} to {self.high}, not {raw[:40]!r}"
            )
        return int(raw)

    def schema(self) -> dict[str, Any]:
        """The parameter's JSON Schema, as the OpenAPI document states it."""
        shape: dict[str, Any] = {"type": "integer", "minimum": self.low, "maximum": self.high}
        if self.default is not None:
            shape["default"] = self.default
        return shape


@dataclass(frozen=True, slots=True)
class Text:
    """A string of at most ``max_chars``; one of ``choices`` when they are given."""

    max_chars: int = MAX_TEXT_CHARS
    choices: tuple[str, ...] = ()
    default: str | None = None

    def read(self, name: str, raw: str) -> str:
        if len(raw) > self.max_chars:
            raise ValidationError(f"{name} is longer than {self.max_chars} characters")
        if self.choices and raw not in self.choices:
            raise ValidationError(f"{name} must be one of {', '.join(self.choices)}, not {raw[:40]!r}")
        return raw

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.choices)} if self.choices else {"type": "string"}


Param = Count | Text
Spec = Mapping[str, Param]


def read_query(params: QueryParams, spec: Spec) -> dict[str, Any]:
    """Every parameter of ``spec`` read from ``params`` (its default when absent), or VALIDATION_ERROR."""
    for name in params:
        if name not in spec:
            takes = ", ".join(spec) if spec else "no query parameters"
            raise ValidationError(f"unknown query parameter {name[:64]!r}; this endpoint takes {takes}")
        if len(params.getlist(name)) > 1:
            raise ValidationError(f"query parameter {name} is given more than once")
    values: dict[str, Any] = {}
    for name, param in spec.items():
        raw = params.get(name)
        values[name] = param.default if raw is None else param.read(name, raw)
    return values


def read_given(params: QueryParams, spec: Spec) -> dict[str, Any]:
    """:func:`read_query` less the parameters absent without a default: the operation's own defaults apply."""
    return {name: value for name, value in read_query(params, spec).items() if value is not None}
