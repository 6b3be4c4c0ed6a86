"""What each model call cost, and whether the budget still allows more.

Money is computed in :class:`~decimal.Decimal` so that sums over thousands
of calls stay exact.  A bad price in configuration (negative, NaN, text)
counts as zero rather than raising, because a typo in a price table must
not stop an agent mid-turn; it shows up as suspiciously cheap calls instead.

The record type has no field for prompts, tool output or memory content:
a ledger meant for accounting cannot leak what the agent saw.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from types import TracebackType

from ..private import private_sqlite_file
from .errors import ValidationError

__all__ = [
    "Budget",
    "BudgetReport",
    "BudgetStatus",
    "CostLedger",
    "CostRecord",
    "ModelPrice",
    "budget_status",
    "call_cost",
    "day_window",
    "month_window",
    "sanitize_price",
]

_MILLION = Decimal(1_000_000)
_ZERO = Decimal(0)
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # fixed width, so text order is time order

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cost_records (
    id                  INTEGER PRIMARY KEY,
    model               TEXT    NOT NULL,
    input_tokens        INTEGER NOT NULL,
    output_tokens       INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    cost_usd            TEXT    NOT NULL,
    session_id          TEXT    NOT NULL,
    agent_id            TEXT    NOT NULL,
    time                TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS cost_records_time ON cost_records (time);
"""
_COLUMNS = "model, input_tokens, output_tokens, cached_input_tokens, cost_usd, session_id, agent_id, time"


def sanitize_price(value: object) -> Decimal:
    """A finite, non-negative price per million tokens, or 0 for anything else."""
    if isinstance(value, bool) or value is None:
        return _ZERO
    if isinstance(value, float):
        value = repr(value)  # Decimal(0.3) would carry binary noise
    if not isinstance(value, Decimal | int | str):
        return _ZERO
    try:
        price = Decimal(value)
    except (InvalidOperation, ValueError):
        return _ZERO
    return price if price.is_finite() and price >= 0 else _ZERO


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens.  Any numeric type is accepted and sanitised.

    ``cached_input_per_million`` of None means cached input costs the same
    as fresh input.
    """

    input_per_million: Decimal
    output_per_million: Decimal
    cached_input_per_million: Decimal | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_per_million", sanitize_price(self.input_per_million))
        object.__setattr__(self, "output_per_million", sanitize_price(self.output_per_million))
        if self.cached_input_per_million is not None:
            object.__setattr__(self, "cached_input_per_million", sanitize_price(self.cached_input_per_million))

    @property
    def cached_price(self) -> Decimal:
        return self.input_per_million if self.cached_input_per_million is None else self.cached_input_per_million


def _tokens(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def call_cost(price: ModelPrice, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> Decimal:
    """Exact USD cost of one call.

    ``input_tokens`` counts fresh input only; ``cached_input_tokens`` are
    billed on top at the cached price.  (If a provider reports cached tokens
    inside its input count, pass the difference, or the ledger over-counts,
    which is the safe direction for a budget.)
    """
    fresh = _tokens("input_tokens", input_tokens)
    cached = _tokens("cached_input_tokens", cached_input_tokens)
    output = _tokens("output_tokens", output_tokens)
    total = fresh * price.input_per_million + cached * price.cached_price + output * price.output_per_million
    return total / _MILLION


@dataclass(frozen=True, slots=True)
class CostRecord:
    model: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost_usd: Decimal
    session_id: str
    agent_id: str
    time: datetime


class BudgetStatus(StrEnum):
    OK = "ok"
    WARNING = "warning"
    EXCEEDED = "exceeded"


_SEVERITY = {BudgetStatus.OK: 0, BudgetStatus.WARNING: 1, BudgetStatus.EXCEEDED: 2}


@dataclass(frozen=True, slots=True)
class Budget:
    """Spending limits in USD (None: no limit) and the warning threshold."""

    daily_usd: Decimal | None = None
    monthly_usd: Decimal | None = None
    warn_ratio: Decimal = Decimal("0.8")

    def __post_init__(self) -> None:
        for name in ("daily_usd", "monthly_usd"):
            value = getattr(self, name)
            if value is not None:
                limit = _decimal(name, value)
                if limit < 0:
                    raise ValidationError(f"Budget.{name} must be >= 0")
                object.__setattr__(self, name, limit)
        ratio = _decimal("warn_ratio", self.warn_ratio)
        if not Decimal(0) < ratio <= Decimal(1):
            raise ValidationError("Budget.warn_ratio must be in (0, 1]")
        object.__setattr__(self, "warn_ratio", ratio)


def _decimal(name: str, value: object) -> Decimal:
    try:
        result = Decimal(repr(value) if isinstance(value, float) else value)  # type: ignore[arg-type]
    except (InvalidOperation, TypeError, ValueError):
        raise ValidationError(f"{name} must be a number, got {value!r}") from None
    if not result.is_finite():
        raise ValidationError(f"{name} must be finite, got {value!r}")
    return result


def budget_status(spent: Decimal, limit: Decimal | None, warn_ratio: Decimal) -> BudgetStatus:
    """Reaching the limit counts as exceeded: the next call would go over."""
    if limit is None:
        return BudgetStatus.OK
    if spent >= limit:
        return BudgetStatus.EXCEEDED
    if spent >= limit * warn_ratio:
        return BudgetStatus.WARNING
    return BudgetStatus.OK


@dataclass(frozen=True, slots=True)
class BudgetReport:
    status: BudgetStatus
    daily_status: BudgetStatus
    monthly_status: BudgetStatus
    daily_spent: Decimal
    monthly_spent: Decimal
    budget: Budget = field(repr=False)


def day_window(now: datetime) -> tuple[datetime, datetime]:
    """The UTC calendar day containing ``now``, as [start, end)."""
    start = _utc(now).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def month_window(now: datetime) -> tuple[datetime, datetime]:
    """The UTC calendar month containing ``now``, as [start, end)."""
    start = _utc(now).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    return start, end


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValidationError("times must be timezone-aware")
    return moment.astimezone(UTC)


def _utc_now() -> datetime:
    return datetime.now(UTC)


class CostLedger:
    """Cost records in SQLite (tables prefixed ``cost_``).

    The default database is ``:memory:``, which gives an in-memory ledger
    with the same code path as a persistent one.
    """

    def __init__(
        self,
        prices: Mapping[str, ModelPrice] | None = None,
        db: str | os.PathLike[str] | sqlite3.Connection = ":memory:",
        *,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.prices: dict[str, ModelPrice] = dict(prices or {})
        self._owns_connection = not isinstance(db, sqlite3.Connection)
        if not isinstance(db, sqlite3.Connection):
            private_sqlite_file(db)  # usage records are the owner's only, like the store
        self._conn = db if isinstance(db, sqlite3.Connection) else sqlite3.connect(db)
        self._clock = clock
        with self._conn:
            self._conn.executescript(_SCHEMA)

    def record(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        *,
        session_id: str = "",
        agent_id: str = "",
        cost_usd: Decimal | None = None,
        time: datetime | None = None,
    ) -> CostRecord:
        """Record one call.  ``cost_usd`` overrides the price table (e.g. a
        provider-reported cost); a model missing from the table costs 0."""
        price = self.prices.get(model, ModelPrice(_ZERO, _ZERO))
        computed = call_cost(price, input_tokens, output_tokens, cached_input_tokens)
        record = CostRecord(
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_input_tokens=cached_input_tokens,
            cost_usd=computed if cost_usd is None else sanitize_price(cost_usd),
            session_id=session_id,
            agent_id=agent_id,
            time=_utc(time or self._clock()),
        )
        with self._conn:
            self._conn.execute(
                f"INSERT INTO cost_records ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.model,
                    record.input_tokens,
                    record.output_tokens,
                    record.cached_input_tokens,
                    str(record.cost_usd),
                    record.session_id,
                    record.agent_id,
                    record.time.strftime(_TIME_FORMAT),
                ),
            )
        return record

    def records(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        session_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[CostRecord]:
        """Records with ``since <= time < until``, optionally for one session/agent."""
        clauses: list[str] = []
        params: list[str] = []
        if since is not None:
            clauses.append("time >= ?")
            params.append(_utc(since).strftime(_TIME_FORMAT))
        if until is not None:
            clauses.append("time < ?")
            params.append(_utc(until).strftime(_TIME_FORMAT))
        if session_id is not None:
            clauses.append("session_id = ?")
            params.append(session_id)
        if agent_id is not None:
            clauses.append("agent_id = ?")
            params.append(agent_id)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._conn.execute(f"SELECT {_COLUMNS} FROM cost_records {where} ORDER BY time, id", params).fetchall()
        return [_row_to_record(row) for row in rows]

    def total(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        session_id: str | None = None,
        agent_id: str | None = None,
    ) -> Decimal:
        records = self.records(since=since, until=until, session_id=session_id, agent_id=agent_id)
        return sum((r.cost_usd for r in records), _ZERO)

    def check_budget(self, budget: Budget, *, now: datetime | None = None, agent_id: str | None = None) -> BudgetReport:
        """Spend so far this UTC day and month against ``budget``."""
        moment = now or self._clock()
        day_start, day_end = day_window(moment)
        month_start, month_end = month_window(moment)
        daily = self.total(since=day_start, until=day_end, agent_id=agent_id)
        monthly = self.total(since=month_start, until=month_end, agent_id=agent_id)
        daily_status = budget_status(daily, budget.daily_usd, budget.warn_ratio)
        monthly_status = budget_status(monthly, budget.monthly_usd, budget.warn_ratio)
        worst = max(daily_status, monthly_status, key=_SEVERITY.__getitem__)
        return BudgetReport(worst, daily_status, monthly_status, daily, monthly, budget)

    def close(self) -> None:
        if self._owns_connection:
            self._conn.close()

    def __enter__(self) -> CostLedger:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _row_to_record(row: tuple[str, int, int, int, str, str, str, str]) -> CostRecord:
    model, input_tokens, output_tokens, cached, cost, session_id, agent_id, time = row
    moment = datetime.strptime(time, _TIME_FORMAT).replace(tzinfo=UTC)
    return CostRecord(model, input_tokens, output_tokens, cached, Decimal(cost), session_id, agent_id, moment)
