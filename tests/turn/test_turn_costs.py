from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from stratamem.turn import (
    Budget,
    BudgetStatus,
    CostLedger,
    CostRecord,
    ModelPrice,
    ValidationError,
    budget_status,
    call_cost,
    sanitize_price,
)
from stratamem.turn.costs import month_window

SONNET = ModelPrice(Decimal(3), Decimal(15), Decimal("0.30"))
T0 = datetime(2025, 3, 31, 22, 0, tzinfo=UTC)


def test_exact_call_cost() -> None:
    assert call_cost(ModelPrice(3, 15), 1000, 500) == Decimal("0.0105")  # type: ignore[arg-type]
    assert call_cost(SONNET, 1000, 500, cached_input_tokens=10_000) == Decimal("0.0135")


def test_cached_input_falls_back_to_input_price() -> None:
    assert call_cost(ModelPrice(Decimal(3), Decimal(15)), 0, 0, cached_input_tokens=1_000_000) == Decimal(3)


def test_float_prices_do_not_carry_binary_noise() -> None:
    price = ModelPrice(0.1, 0.3)  # type: ignore[arg-type]
    assert call_cost(price, 1_000_000, 1_000_000) == Decimal("0.4")


@pytest.mark.parametrize("bad", [-1, Decimal(-3), float("nan"), float("inf"), "cheap", None, True, object(), "NaN"])
def test_bad_prices_count_as_zero(bad: object) -> None:
    assert sanitize_price(bad) == 0
    assert call_cost(ModelPrice(bad, Decimal(15)), 1000, 500) == Decimal("0.0075")  # type: ignore[arg-type]


@pytest.mark.parametrize("tokens", [-1, 1.5, "10", True])
def test_bad_token_counts_refused(tokens: object) -> None:
    with pytest.raises(ValidationError):
        call_cost(SONNET, tokens, 0)  # type: ignore[arg-type]


def test_record_has_no_content_fields() -> None:
    assert {f.name for f in fields(CostRecord)} == {
        "model",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "cost_usd",
        "session_id",
        "agent_id",
        "time",
    }


def test_ledger_persists_and_filters(tmp_path: Path) -> None:
    db = tmp_path / "costs.db"
    with CostLedger({"sonnet": SONNET}, db) as ledger:
        first = ledger.record("sonnet", 1000, 500, session_id="s1", agent_id="a1", time=T0)
        ledger.record("sonnet", 2000, 0, session_id="s2", agent_id="a2", time=T0 + timedelta(hours=1))
        ledger.record("unknown-model", 10**6, 10**6, session_id="s1", agent_id="a1", time=T0)
        ledger.record("sonnet", 1, 1, cost_usd=Decimal("0.5"), session_id="s1", agent_id="a1", time=T0)
    assert first.cost_usd == Decimal("0.0105")
    with CostLedger({"sonnet": SONNET}, db) as reopened:
        assert reopened.records(session_id="s1")[0] == first
        assert reopened.total() == Decimal("0.5165")
        assert reopened.total(agent_id="a2") == Decimal("0.006")
        assert reopened.total(since=T0 + timedelta(minutes=1)) == Decimal("0.006")
        assert reopened.total(until=T0 + timedelta(minutes=1)) == Decimal("0.5105")


def test_in_memory_ledger_uses_clock() -> None:
    ledger = CostLedger({"sonnet": SONNET}, clock=lambda: T0)
    assert ledger.record("sonnet", 10, 10).time == T0


def test_budgets_warn_and_exceed() -> None:
    now = datetime(2025, 3, 15, 12, tzinfo=UTC)
    ledger = CostLedger({"m": ModelPrice(Decimal(1), Decimal(0))}, clock=lambda: now)
    budget = Budget(daily_usd=Decimal(10), monthly_usd=Decimal(100), warn_ratio=Decimal("0.8"))

    ledger.record("m", 7_000_000, 0)  # $7 today
    report = ledger.check_budget(budget)
    assert report.status is BudgetStatus.OK and report.daily_spent == Decimal(7)

    ledger.record("m", 1_000_000, 0)  # $8 today: 80% of the day
    assert ledger.check_budget(budget).status is BudgetStatus.WARNING

    ledger.record("m", 2_500_000, 0)  # $10.50 today
    report = ledger.check_budget(budget)
    assert (report.status, report.daily_status, report.monthly_status) == (
        BudgetStatus.EXCEEDED,
        BudgetStatus.EXCEEDED,
        BudgetStatus.OK,
    )

    tomorrow = now + timedelta(days=1)
    assert ledger.check_budget(budget, now=tomorrow).status is BudgetStatus.OK
    ledger.record("m", 75_000_000, 0, time=now - timedelta(days=3))  # earlier this month
    report = ledger.check_budget(budget, now=tomorrow)
    assert (report.daily_status, report.monthly_status) == (BudgetStatus.OK, BudgetStatus.WARNING)
    assert report.monthly_spent == Decimal("85.5")


def test_budget_status_edges() -> None:
    ratio = Decimal("0.8")
    assert budget_status(Decimal(0), None, ratio) is BudgetStatus.OK
    assert budget_status(Decimal("7.99"), Decimal(10), ratio) is BudgetStatus.OK
    assert budget_status(Decimal(8), Decimal(10), ratio) is BudgetStatus.WARNING
    assert budget_status(Decimal(10), Decimal(10), ratio) is BudgetStatus.EXCEEDED
    assert budget_status(Decimal(0), Decimal(0), ratio) is BudgetStatus.EXCEEDED


@pytest.mark.parametrize(
    "kwargs",
    [{"daily_usd": -1}, {"monthly_usd": "lots"}, {"warn_ratio": 0}, {"warn_ratio": 1.5}, {"daily_usd": float("nan")}],
)
def test_bad_budgets_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Budget(**kwargs)  # type: ignore[arg-type]


def test_windows_are_utc_calendar_periods() -> None:
    assert month_window(datetime(2025, 12, 31, 23, tzinfo=UTC)) == (
        datetime(2025, 12, 1, tzinfo=UTC),
        datetime(2026, 1, 1, tzinfo=UTC),
    )
    with pytest.raises(ValidationError):
        month_window(datetime(2025, 1, 1))
