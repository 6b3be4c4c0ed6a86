"""One store's compartments as its processes see them: the registry read once and kept, read again when a
label holds a bit this process has not seen (another process defined more), and the names given back to
the records a backend returns (``sql/compartments.py`` holds the SQL)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from ..errors import StorageError, ValidationError
from ..labels import Compartments, Label, compartment_set, level_of
from ..models import Memory
from .sql import compartments as sql

if TYPE_CHECKING:
    from .protocol import Backend

M = TypeVar("M", bound=Memory)


class Registry:
    def __init__(self, backend: Backend, clock: Callable[[], datetime]) -> None:
        self._backend = backend
        self._now = clock
        self._lock = threading.Lock()
        self._known: Compartments | None = None

    def current(self, *, fresh: bool = False) -> Compartments:
        with self._lock:
            if self._known is None or fresh:
                self._known = self._backend.transactions.operator(self._now(), sql.read_body, read_only=True)
            return self._known

    def define(self, names: Iterable[object], now: datetime) -> tuple[str, ...]:
        """Define names (idempotent); the registry's names after, in definition order."""
        wanted = list(names) if not isinstance(names, str) else [names]
        registry = self._backend.transactions.operator(now, lambda tx: sql.define_body(tx, wanted))
        with self._lock:
            self._known = registry
        return registry.names

    def mask(self, names: Iterable[str]) -> int:
        """The bits of defined names; an undefined one is read again before it is refused. No names need no
        registry (a store without compartments never reads it)."""
        names = list(names)
        if not names:
            return 0
        try:
            return self.current().mask(names)
        except ValidationError:
            return self.current(fresh=True).mask(names)

    def encode(self, label: Label) -> int:
        return int(label.level) | (self.mask(label.compartments) << 2)

    def names_of(self, code: int) -> frozenset[str]:
        if code < 4:
            return frozenset()
        try:
            return self.current().compartments_of(code)
        except KeyError:
            try:
                return self.current(fresh=True).compartments_of(code)
            except KeyError:
                raise StorageError(
                    f"a stored label holds compartment bits this store does not define ({code})"
                ) from None

    def label_of(self, code: int) -> Label:
        return Label(level_of(code), self.names_of(code))

    def named(self, memory: M) -> M:
        """The record with its compartments' names (a record without any is returned as it is)."""
        if memory.label_code < 4 or memory.compartments:
            return memory
        return replace(memory, compartments=self.names_of(memory.label_code))

    def clearance_mask(self, compartments: Iterable[object] | None) -> int:
        """A new session's cleared compartments as bits (names validated, each defined by the operator)."""
        return self.mask(compartment_set(compartments))
