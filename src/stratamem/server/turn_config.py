"""The operator's turn settings for ``stratamem serve`` and ``stratamem mcp``: prices, budgets, retention.

The same settings the Python API takes (``TurnSettings``, ``Budget``,
``ModelPrice``, ``Retention``), from the config file and then the
environment (the environment wins, as for every other server setting)::

    [turns]
    history_budget_tokens = 16000   # the most a request may ask for; requests may only lower it
    history_window = 200            # newest messages read per prompt
    max_tool_results = 128          # per turn
    daily_budget_usd = 5            # budget status reported with each usage record
    monthly_budget_usd = 100
    budget_warn_ratio = 0.8

    [turns.prices."gpt-4o"]         # USD per million tokens
    input = 2.5
    output = 10
    cached_input = 1.25             # optional: defaults to the input price

    [retention]                     # days; false keeps a kind of record forever
    transcript_days = 30
    autosave_ttl_days = 30
    ledger_days = 400

Environment: ``STRATAMEM_TRANSCRIPT_DAYS``, ``STRATAMEM_AUTOSAVE_TTL_DAYS``,
``STRATAMEM_LEDGER_DAYS`` (a number, or ``never``), ``STRATAMEM_DAILY_BUDGET_USD``,
``STRATAMEM_MONTHLY_BUDGET_USD`` and ``STRATAMEM_PRICES`` (JSON:
``{"model": {"input": 2.5, "output": 10}}``; it replaces the file's table).

Unlike ``ModelPrice`` in code (which counts a bad price as zero so a typo
never stops an agent mid-turn), a price the operator configures for a server
is checked at startup: a negative, NaN, infinite or non-numeric price stops
the server with a VALIDATION_ERROR naming the model and field, before any
turn could be billed at zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..strict_json import JsonRefused, read_json
from ..turn.costs import Budget, ModelPrice
from ..turn.retention import Retention
from ..turn.runtime import TurnSettings

ENV_PREFIX = "STRATAMEM_"
TURN_KEYS = {
    "history_budget_tokens",
    "history_window",
    "max_tool_results",
    "daily_budget_usd",
    "monthly_budget_usd",
    "budget_warn_ratio",
    "prices",
}
RETENTION_KEYS = {"transcript_days", "autosave_ttl_days", "ledger_days"}
PRICE_KEYS = {"input", "output", "cached_input"}
MAX_MODELS = 1000
_NEVER = {"never", "forever", "none", "off", "false"}


@dataclass(frozen=True, slots=True)
class TurnConfig:
    """The ``[turns]`` and ``[retention]`` tables, checked."""

    settings: TurnSettings = field(default_factory=TurnSettings)
    retention: Retention = field(default_factory=Retention)


def _where(source: Path | None, where: str) -> str:
    return f"{source}: {where}" if source is not None else where


def _number(source: Path | None, where: str, value: Any, *, integer: bool = False) -> Decimal:
    """A finite number >= 0 (a TOML boolean or text is never taken for one)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise ValidationError(_where(source, f"{where} must be a number >= 0, got {str(value)[:40]!r}"))
    try:
        number = Decimal(repr(value) if isinstance(value, float) else str(value).strip())
    except (InvalidOperation, ValueError):
        raise ValidationError(
            _where(source, f"{where} must be a number >= 0, got {str(value)[:40]!r}")
        ) from None
    if not number.is_finite() or number < 0:
        raise ValidationError(
            _where(source, f"{where} must be a finite number >= 0, got {str(value)[:40]!r}")
        )
    if integer and number != number.to_integral_value():
        raise ValidationError(_where(source, f"{where} must be a whole number"))
    return number


def _prices(source: Path | None, where: str, table: Any) -> dict[str, ModelPrice]:
    if not isinstance(table, Mapping):
        raise ValidationError(_where(source, f"{where} must be a table of models"))
    if len(table) > MAX_MODELS:
        raise ValidationError(_where(source, f"{where} may name at most {MAX_MODELS} models"))
    prices: dict[str, ModelPrice] = {}
    for model, entry in table.items():
        here = f"{where}.{str(model)[:100]!r}"
        if not isinstance(model, str) or not 0 < len(model) <= 200:
            raise ValidationError(_where(source, f"{here}: a model name is 1..200 characters"))
        if not isinstance(entry, Mapping):
            raise ValidationError(_where(source, f"{here} must be a table {{input, output[, cached_input]}}"))
        unknown = sorted(set(entry) - PRICE_KEYS)
        if unknown or not {"input", "output"} <= set(entry):
            raise ValidationError(
                _where(source, f"{here} needs input and output (and may have cached_input), not {unknown}")
            )
        cached = entry.get("cached_input")
        prices[model] = ModelPrice(
            _number(source, f"{here}.input", entry["input"]),
            _number(source, f"{here}.output", entry["output"]),
            None if cached is None else _number(source, f"{here}.cached_input", cached),
        )
    return prices


def _days(source: Path | None, where: str, value: Any) -> float | None:
    if value is False or (isinstance(value, str) and value.strip().lower() in _NEVER):
        return None
    days = float(_number(source, where, value))
    if not math.isfinite(days):
        raise ValidationError(_where(source, f"{where} is too large"))
    return days


def parse_turn_config(
    turns: Mapping[str, Any],
    retention: Mapping[str, Any],
    source: Path | None,
    env: Mapping[str, str] | None = None,
) -> TurnConfig:
    """The checked settings from the file's tables, then the environment."""
    env = env or {}
    for name, table, allowed in (("turns", turns, TURN_KEYS), ("retention", retention, RETENTION_KEYS)):
        unknown = sorted(set(table) - allowed)
        if unknown:
            raise ValidationError(
                _where(
                    source,
                    f"unknown key(s) in [{name}]: {', '.join(unknown)}; valid keys are {', '.join(sorted(allowed))}",
                )
            )
    options: dict[str, Any] = {}
    for name in ("history_budget_tokens", "history_window", "max_tool_results"):
        if name in turns:
            options[name] = int(_number(source, f"turns.{name}", turns[name], integer=True))
    prices = _prices(source, "turns.prices", turns.get("prices", {}))
    if env.get(ENV_PREFIX + "PRICES"):
        try:
            table = read_json(env[ENV_PREFIX + "PRICES"])  # a model priced twice is refused, not last-wins
        except JsonRefused as exc:
            raise exc.located(f"{ENV_PREFIX}PRICES") from None
        prices = _prices(None, f"{ENV_PREFIX}PRICES", table)
    budget: dict[str, Any] = {}
    for key, env_name in (
        ("daily_budget_usd", "DAILY_BUDGET_USD"),
        ("monthly_budget_usd", "MONTHLY_BUDGET_USD"),
    ):
        raw = env.get(ENV_PREFIX + env_name) or turns.get(key)
        where = f"{ENV_PREFIX}{env_name}" if env.get(ENV_PREFIX + env_name) else f"turns.{key}"
        if raw is not None:
            budget[key.removesuffix("_budget_usd") + "_usd"] = _number(source, where, raw)
    if "budget_warn_ratio" in turns:
        budget["warn_ratio"] = _number(source, "turns.budget_warn_ratio", turns["budget_warn_ratio"])
    days: dict[str, float | None] = {}
    for key in sorted(RETENTION_KEYS):
        raw = env.get(ENV_PREFIX + key.upper())
        if raw:
            days[key] = _days(None, ENV_PREFIX + key.upper(), raw)
        elif key in retention:
            days[key] = _days(source, f"retention.{key}", retention[key])
    try:
        return TurnConfig(
            TurnSettings(
                prices=prices, budget=Budget(**budget) if budget.keys() - {"warn_ratio"} else None, **options
            ),
            Retention(**days),
        )
    except ValidationError as exc:
        raise ValidationError(_where(source, exc.message)) from None
