"""How long the turn's records are kept: transcript, autosaved memories, usage ledger.

Retention is applied by ``store.purge`` (the operator's one hard-delete
action): transcript messages older than ``transcript_days`` and usage records
older than ``ledger_days`` are deleted with the purged memories, from the same
database files. Autosaved ``conversation`` memories are written with a ttl of
``autosave_ttl_days``, so once it passes they expire and the next purge
removes them — the message text then survives nowhere in the store.
``None`` keeps a kind of record forever.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..errors import ValidationError

DEFAULT_TRANSCRIPT_DAYS = 30.0
DEFAULT_AUTOSAVE_TTL_DAYS = 30.0
DEFAULT_LEDGER_DAYS = 400.0  # a year of monthly budgets plus a margin


@dataclass(frozen=True, slots=True)
class Retention:
    transcript_days: float | None = DEFAULT_TRANSCRIPT_DAYS
    autosave_ttl_days: float | None = DEFAULT_AUTOSAVE_TTL_DAYS
    ledger_days: float | None = DEFAULT_LEDGER_DAYS

    def __post_init__(self) -> None:
        for name in ("transcript_days", "autosave_ttl_days", "ledger_days"):
            value = getattr(self, name)
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ValidationError(f"Retention.{name} must be a finite number of days >= 0, or None")

    @property
    def autosave_ttl(self) -> timedelta | None:
        return None if self.autosave_ttl_days is None else timedelta(days=self.autosave_ttl_days)

    def cutoffs(self, before: datetime, now: datetime) -> tuple[datetime | None, datetime | None]:
        """Transcript and usage rows older than these go in a purge (never younger than ``before``)."""

        def cutoff(days: float | None) -> datetime | None:
            return None if days is None else min(before, now - timedelta(days=days))

        return cutoff(self.transcript_days), cutoff(self.ledger_days)
