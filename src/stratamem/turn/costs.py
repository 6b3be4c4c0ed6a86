"""What each model call cost, and whether the budget still allows more.

Money is computed in :class:`~decimal.Decimal` so that sums over thousands
of calls stay exact.  A bad price (negative, NaN, infinite, text) is refused
with a VALIDATION_ERROR when the :class:`ModelPrice` is built — at setup,
when the price table is read (``stratamem serve`` refuses to start), never
mid-turn — so no call is silently billed at zero. ``sanitize_price`` remains
for callers that prefer zero. A bad *reported* cost (``cost_usd`` given by
the caller) is refused too: that is request data.

Usage records live in the store (``turn_usage``), labelled with the
session's taint like every other row, inside the audit chain, exported,
migrated and purged by retention (``ledger_days``). The record type has no
field for prompts, tool output or memory content: a ledger meant for
accounting cannot leak what the agent saw. A session's budget status counts
the usage its taint covers (its own agent, levels <= taint); the operator's
``store.usage()`` sees everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import TYPE_CHECKING

from ..storage import turn_store
from ..storage.sql.transcripts import UsageDraft, UsageRecord
from .errors import ValidationError

if TYPE_CHECKING:
    from ..session import Session

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
MAX_MODEL_CHARS = 200
MAX_TOKENS = 10**12


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


def _is_zero(value: object) -> bool:
    """A price that really is zero (as opposed to one ``sanitize_price`` turned into zero)."""
    if isinstance(value, bool) or not isinstance(value, Decimal | int | float | str):
        return False
    try:
        return Decimal(repr(value) if isinstance(value, float) else value) == 0
    except (InvalidOperation, ValueError):
        return False


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens: int, Decimal, float or numeric text, finite and >= 0 (else VALIDATION_ERROR).

    ``cached_input_per_million`` of None means cached input costs the same
    as fresh input.
    """

    input_per_million: Decimal
    output_per_million: Decimal
    cached_input_per_million: Decimal | None = None

    def __post_init__(self) -> None:
        for name in ("input_per_million", "output_per_million", "cached_input_per_million"):
            value = getattr(self, name)
            if value is None and name.startswith("cached"):
                continue
            price = sanitize_price(value)
            if price == 0 and not _is_zero(value):
                raise ValidationError(
                    f"ModelPrice.{name} must be a finite number >= 0, got {str(value)[:40]!r}"
                )
            object.__setattr__(self, name, price)

    @property
    def cached_price(self) -> Decimal:
        return (
            self.input_per_million if self.cached_input_per_million is None else self.cached_input_per_million
        )


def _tokens(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise ValidationError(f"{name} must be an integer in 0..{MAX_TOKENS}, got {str(value)[:40]!r}")
    return value


def call_cost(
    price: ModelPrice, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0
) -> Decimal:
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


CostRecord = UsageRecord  # one model call, as the store keeps it


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
    end = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, end


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValidationError("times must be timezone-aware")
    return moment.astimezone(UTC)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def reported_cost(value: object) -> Decimal:
    """A cost the caller reports: a finite, non-negative number, else VALIDATION_ERROR."""
    if isinstance(value, bool) or value is None or not isinstance(value, Decimal | int | float | str):
        raise ValidationError("cost_usd must be a finite number >= 0")
    try:
        cost = Decimal(repr(value) if isinstance(value, float) else value)
    except (InvalidOperation, ValueError):
        raise ValidationError("cost_usd must be a finite number >= 0") from None
    if not cost.is_finite() or cost < 0 or cost > Decimal(10**9):
        raise ValidationError("cost_usd must be a finite number >= 0 (and below 1e9)")
    return cost


class CostLedger:
    """A session's view of the usage ledger in its store; no database of its own."""

    def __init__(self, session: Session, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self.session = session
        self.prices: dict[str, ModelPrice] = dict(prices or {})

    def record(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        *,
        cost_usd: object | None = None,
    ) -> UsageRecord:
        """Record one call.  ``cost_usd`` overrides the price table (e.g. a
        provider-reported cost); a model missing from the table costs 0."""
        if not isinstance(model, str) or not 0 < len(model) <= MAX_MODEL_CHARS:
            raise ValidationError(f"model must be a non-empty string of at most {MAX_MODEL_CHARS} characters")
        price = self.prices.get(model, ModelPrice(_ZERO, _ZERO))
        computed = call_cost(price, input_tokens, output_tokens, cached_input_tokens)
        cost = computed if cost_usd is None else reported_cost(cost_usd)
        draft = UsageDraft(model, input_tokens, output_tokens, cached_input_tokens, cost)
        store = self.session.store
        return turn_store.record_usage(store.backend, self.session.id, draft, store.now())

    def check_budget(self, budget: Budget, *, now: datetime | None = None) -> BudgetReport:
        """Spend so far this UTC day and month against ``budget`` (what the session's taint covers)."""
        moment = now or self.session.store.now()
        daily, monthly = turn_store.usage_spent(
            self.session.store.backend, self.session.id, None, [day_window(moment), month_window(moment)]
        )
        daily_status = budget_status(daily, budget.daily_usd, budget.warn_ratio)
        monthly_status = budget_status(monthly, budget.monthly_usd, budget.warn_ratio)
        worst = max(daily_status, monthly_status, key=_SEVERITY.__getitem__)
        return BudgetReport(worst, daily_status, monthly_status, daily, monthly, budget)

    def records(
        self, since: datetime | None = None, until: datetime | None = None, limit: int = 1000
    ) -> list[UsageRecord]:
        """The usage the session may see (own agent, levels <= taint), oldest first, at most ``limit``."""
        return turn_store.usage_records(
            self.session.store.backend, self.session.id, None, since, until, max(1, min(int(limit), 100_000))
        )
