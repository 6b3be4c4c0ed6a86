from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

import stratamem as sm
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


@pytest.mark.parametrize(
    "bad", [-1, Decimal(-3), float("nan"), float("inf"), "cheap", None, True, object(), "NaN"]
)
def test_bad_prices_are_refused_when_the_price_is_built(bad: object) -> None:
    assert sanitize_price(bad) == 0  # for callers that prefer zero
    with pytest.raises(ValidationError) as refused:
        ModelPrice(bad, Decimal(15))  # type: ignore[arg-type]
    assert refused.value.code == "VALIDATION_ERROR"
    if bad is not None:  # a cached price of None means "as the input price"
        with pytest.raises(ValidationError):
            ModelPrice(Decimal(1), Decimal(15), bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("zero", [0, Decimal(0), 0.0, "0", "0.00", Decimal("-0")])
def test_a_zero_price_is_a_price(zero: object) -> None:
    assert call_cost(ModelPrice(zero, Decimal(15)), 1000, 500) == Decimal("0.0075")  # type: ignore[arg-type]


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
        "level",
        "time",
        "label_code",
        "compartments",
    }


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_ledger_lives_in_the_store_and_filters(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    store = sm.open_store(db, clock=Clock(T0))
    session = store.session("a1")
    ledger = CostLedger(session, {"sonnet": SONNET})
    first = ledger.record("sonnet", 1000, 500)
    ledger.record("unknown-model", 10**6, 10**6)
    ledger.record("sonnet", 1, 1, cost_usd=Decimal("0.5"))
    CostLedger(store.session("a2"), {"sonnet": SONNET}).record("sonnet", 2000, 0)
    store.close()
    assert first.cost_usd == Decimal("0.0105") and first.agent_id == "a1"
    reopened = sm.open_store(db, clock=Clock(T0))
    again = CostLedger(sm.Session(reopened, session.id))
    assert again.records()[0] == first
    assert sum(r.cost_usd for r in again.records()) == Decimal("0.5105")  # own agent only
    assert sum(r.cost_usd for r in reopened.usage()) == Decimal("0.5165")  # the operator sees all
    assert [r.agent_id for r in reopened.usage(agent_id="a2")] == ["a2"]
    reopened.close()


def test_budgets_warn_and_exceed() -> None:
    clock = Clock(datetime(2025, 3, 15, 12, tzinfo=UTC))
    store = sm.open_store(":memory:", clock=clock)
    ledger = CostLedger(store.session("main"), {"m": ModelPrice(Decimal(1), Decimal(0))})
    budget = Budget(daily_usd=Decimal(10), monthly_usd=Decimal(100), warn_ratio=Decimal("0.8"))
    now = clock.now
    clock.now = now - timedelta(days=3)
    ledger.record("m", 75_000_000, 0)  # earlier this month
    clock.now = now
    ledger.record("m", 7_000_000, 0)  # $7 today
    report = ledger.check_budget(budget)
    assert report.daily_status is BudgetStatus.OK and report.daily_spent == Decimal(7)
    assert report.status is BudgetStatus.WARNING  # $82 this month: the worse of the two
    ledger.record("m", 1_000_000, 0)  # $8 today: 80% of the day
    assert ledger.check_budget(budget).daily_status is BudgetStatus.WARNING
    ledger.record("m", 2_500_000, 0)  # $10.50 today
    report = ledger.check_budget(budget)
    assert (report.status, report.daily_status, report.monthly_status) == (
        BudgetStatus.EXCEEDED,
        BudgetStatus.EXCEEDED,
        BudgetStatus.WARNING,
    )
    assert report.monthly_spent == Decimal("85.5")
    assert ledger.check_budget(budget, now=now + timedelta(days=1)).daily_status is BudgetStatus.OK


@pytest.mark.parametrize("cost", [-1, float("nan"), float("inf"), "lots", Decimal("-0.01"), True, 10**12])
def test_bad_reported_costs_refused_and_nothing_recorded(cost: object) -> None:
    store = sm.open_store(":memory:")
    ledger = CostLedger(store.session("main"))
    with pytest.raises(ValidationError):
        ledger.record("m", 1, 1, cost_usd=cost)
    assert ledger.records() == []


@pytest.mark.parametrize("model", ["", "x" * 201, None, 3])
def test_bad_model_names_refused(model: object) -> None:
    ledger = CostLedger(sm.open_store(":memory:").session("main"))
    with pytest.raises(ValidationError):
        ledger.record(model, 1, 1)  # type: ignore[arg-type]


def test_budget_status_edges() -> None:
    ratio = Decimal("0.8")
    assert budget_status(Decimal(0), None, ratio) is BudgetStatus.OK
    assert budget_status(Decimal("7.99"), Decimal(10), ratio) is BudgetStatus.OK
    assert budget_status(Decimal(8), Decimal(10), ratio) is BudgetStatus.WARNING
    assert budget_status(Decimal(10), Decimal(10), ratio) is BudgetStatus.EXCEEDED
    assert budget_status(Decimal(0), Decimal(0), ratio) is BudgetStatus.EXCEEDED


@pytest.mark.parametrize(
    "kwargs",
    [
        {"daily_usd": -1},
        {"monthly_usd": "lots"},
        {"warn_ratio": 0},
        {"warn_ratio": 1.5},
        {"daily_usd": float("nan")},
    ],
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


@pytest.mark.parametrize(
    "prices", [{"m": 3.0}, {"m": {"input": 1, "output": 2}}, {1: ModelPrice(1, 2)}, ["m"]]
)
def test_turn_settings_refuse_a_price_table_of_the_wrong_shape(prices: object) -> None:
    with pytest.raises(ValidationError) as refused:
        sm.turn.TurnSettings(prices=prices)  # type: ignore[arg-type]
    assert refused.value.code == "VALIDATION_ERROR"
