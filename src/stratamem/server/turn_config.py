"""The operator's turn settings for ``stratamem serve`` and ``stratamem mcp``: everything a ``Turn`` takes.

A Python ``Turn`` is configured by ``TurnSettings`` (and the store's
``Retention``); a served turn by these tables, which set the same fields,
from the config file and then the environment (the environment wins, as for
every other server setting)::

    [turns]
    history_budget_tokens = 16000   # the most a request may ask for; requests may only lower it
    history_window = 200            # newest messages read per prompt
    max_tool_results = 128          # per turn
    daily_budget_usd = 5            # budget status reported with each usage record
    monthly_budget_usd = 100
    budget_warn_ratio = 0.8

    [turns.context]                 # recall into [Memory context]: ContextConfig's fields
    max_entries = 4
    min_coverage = 0.21

    [turns.autosave]                # the user's message kept as a memory: AutosavePolicy's fields
    enabled = true
    origins = ["interactive", "channel"]
    category = "conversation"

    [turns.tool_limits]             # ToolResultLimits' fields
    max_tool_result_chars = 50000

    [turns.prices."gpt-4o"]         # USD per million tokens
    input = 2.5
    output = 10
    cached_input = 1.25             # optional: defaults to the input price

    [retention]                     # days; false keeps a kind of record forever
    transcript_days = 30
    autosave_ttl_days = 30          # how long an autosaved message is kept
    ledger_days = 400

The keys are derived from the dataclasses (``SECTIONS``, ``SCALARS``): a
field added to ``TurnSettings``, ``ContextConfig``, ``AutosavePolicy`` or
``ToolResultLimits`` is a key here at once; a field of a type no reader
here takes lands in ``UNREADABLE``, which a test keeps empty, and
``docs/turns.md`` lists every key (tested against ``settable_keys``).
Only ``token_counter`` (a function) is code-only: servers count tokens with
``estimate_tokens``.

Environment: ``STRATAMEM_TRANSCRIPT_DAYS``, ``STRATAMEM_AUTOSAVE_TTL_DAYS``,
``STRATAMEM_LEDGER_DAYS`` (a number, or ``never``), ``STRATAMEM_DAILY_BUDGET_USD``,
``STRATAMEM_MONTHLY_BUDGET_USD`` and ``STRATAMEM_PRICES`` (JSON:
``{"model": {"input": 2.5, "output": 10}}``; it replaces the file's table).

Every value is checked at startup, as ``ModelPrice``, ``Budget`` and the
other settings check it in code: a wrong type, a negative, NaN, infinite or
non-numeric price, budget or bound, an unknown origin or an unknown key stops
the server with a VALIDATION_ERROR naming the setting (``turns.prices.'gpt-4o'.input``,
``turns.context.max_entries``), before any turn could run on it.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..env_settings import env_name
from ..errors import ValidationError
from ..strict_json import JsonRefused, read_json
from ..turn.costs import Budget, ModelPrice
from ..turn.retention import Retention
from ..turn.runtime import TurnSettings

BUDGET_KEYS = {
    "daily_budget_usd": "daily_usd",
    "monthly_budget_usd": "monthly_usd",
    "budget_warn_ratio": "warn_ratio",
}
CODE_ONLY = {"token_counter": "a function; servers count tokens with estimate_tokens"}
RETENTION_KEYS = {"transcript_days", "autosave_ttl_days", "ledger_days"}
PRICE_KEYS = {"input", "output", "cached_input"}
MAX_MODELS = 1000
MAX_LIST_ITEMS = 1000
_NEVER = {"never", "forever", "none", "off", "false"}

Reader = Callable[[Path | None, str, Any], Any]


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


def _integer(source: Path | None, where: str, value: Any) -> int:
    return int(_number(source, where, value, integer=True))


def _float(source: Path | None, where: str, value: Any) -> float:
    number = float(_number(source, where, value))
    if not math.isfinite(number):
        raise ValidationError(_where(source, f"{where} is too large"))
    return number


def _boolean(source: Path | None, where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(_where(source, f"{where} must be true or false, got {str(value)[:40]!r}"))
    return value


def _text(source: Path | None, where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValidationError(_where(source, f"{where} must be a string, got {str(value)[:40]!r}"))
    return value


def _names(source: Path | None, where: str, value: Any) -> frozenset[str]:
    if (
        not isinstance(value, list)
        or len(value) > MAX_LIST_ITEMS
        or not all(isinstance(v, str) for v in value)
    ):
        raise ValidationError(_where(source, f"{where} must be a list of at most {MAX_LIST_ITEMS} strings"))
    return frozenset(value)


# How a value of each field type is read from TOML. A field of any other type cannot be set from a file.
_READERS: dict[Any, Reader] = {
    bool: _boolean,
    int: _integer,
    float: _float,
    str: _text,
    frozenset[str]: _names,
}


def _reader(owner: str, name: str, kind: Any, unreadable: list[str]) -> Reader | None:
    reader = _READERS.get(kind)
    if reader is None:
        unreadable.append(f"{owner}.{name} ({kind})")
    return reader


def _derive() -> tuple[dict[str, type], dict[str, dict[str, Reader]], dict[str, Reader], list[str]]:
    """Every ``TurnSettings`` field, sorted by how the ``[turns]`` table sets it.

    A field of a type with no reader lands in the last list, which must stay
    empty (``tests/server/test_server_turn_config.py``): the server still
    starts, and the test names the field to teach this module.
    """
    hints = typing.get_type_hints(TurnSettings)
    classes: dict[str, type] = {}
    sections: dict[str, dict[str, Reader]] = {}
    scalars: dict[str, Reader] = {}
    unreadable: list[str] = []
    for f in dataclasses.fields(TurnSettings):
        kind = hints[f.name]
        if f.name in CODE_ONLY or f.name in ("prices", "budget"):
            continue  # code only; the prices table and the budget keys are read on their own
        if dataclasses.is_dataclass(kind) and isinstance(kind, type):
            inner = typing.get_type_hints(kind)
            readers = {
                g.name: _reader(kind.__name__, g.name, inner[g.name], unreadable)
                for g in dataclasses.fields(kind)
            }
            classes[f.name] = kind
            sections[f.name] = {key: r for key, r in readers.items() if r is not None}
        elif (reader := _reader("TurnSettings", f.name, kind, unreadable)) is not None:
            scalars[f.name] = reader
    return classes, sections, scalars, unreadable


SECTION_CLASSES, SECTIONS, SCALARS, UNREADABLE = _derive()
_SETTING_NAMES = {
    **{f"Budget.{field}": f"turns.{key}" for key, field in BUDGET_KEYS.items()},
    "TurnSettings.": "turns.",
    "Retention.": "retention.",
}
TURN_KEYS = {*SCALARS, *SECTIONS, *BUDGET_KEYS, "prices"}


def settable_keys() -> list[str]:
    """Every key the file sets, dotted (``turns.context.max_entries``), ``[retention]`` included."""
    keys = [f"turns.{name}" for name in (*SCALARS, *BUDGET_KEYS, "prices")]
    keys += [f"turns.{section}.{name}" for section, names in SECTIONS.items() for name in names]
    return keys + [f"retention.{name}" for name in sorted(RETENTION_KEYS)]


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
    return _float(source, where, value)


def _section(source: Path | None, name: str, table: Any) -> Any:
    """``[turns.<name>]``: its dataclass built from the keys given (the others keep their defaults)."""
    where, readers, cls = f"turns.{name}", SECTIONS[name], SECTION_CLASSES[name]
    if not isinstance(table, Mapping):
        raise ValidationError(_where(source, f"{where} must be a table ([{where}])"))
    unknown = sorted(set(table) - set(readers))
    if unknown:
        raise ValidationError(
            _where(
                source,
                f"unknown key(s) in [{where}]: {', '.join(map(str, unknown))}; "
                f"valid keys are {', '.join(sorted(readers))}",
            )
        )
    values = {key: readers[key](source, f"{where}.{key}", value) for key, value in table.items()}
    try:
        return cls(**values)
    except ValidationError as exc:  # the dataclass's own range checks, named as the file names them
        message = exc.message.replace(f"{cls.__name__}.", f"{where}.")
        raise ValidationError(
            _where(source, message if where in message else f"{where}: {message}")
        ) from None


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
    options: dict[str, Any] = {
        name: read(source, f"turns.{name}", turns[name]) for name, read in SCALARS.items() if name in turns
    }
    for name in SECTIONS:
        if name in turns:
            options[name] = _section(source, name, turns[name])
    prices = _prices(source, "turns.prices", turns.get("prices", {}))
    if env.get(env_name("prices")):
        try:
            table = read_json(env[env_name("prices")])  # a model priced twice is refused, not last-wins
        except JsonRefused as exc:
            raise exc.located(env_name("prices")) from None
        prices = _prices(None, env_name("prices"), table)
    budget: dict[str, Any] = {}
    for key in ("daily_budget_usd", "monthly_budget_usd"):
        variable = env_name(key)
        raw = env.get(variable) or turns.get(key)
        where = variable if env.get(variable) else f"turns.{key}"
        if raw is not None:
            budget[key.removesuffix("_budget_usd") + "_usd"] = _number(source, where, raw)
    if "budget_warn_ratio" in turns:
        budget["warn_ratio"] = _number(source, "turns.budget_warn_ratio", turns["budget_warn_ratio"])
    days: dict[str, float | None] = {}
    for key in sorted(RETENTION_KEYS):
        raw = env.get(env_name(key))
        if raw:
            days[key] = _days(None, env_name(key), raw)
        elif key in retention:
            days[key] = _days(source, f"retention.{key}", retention[key])
    try:
        return TurnConfig(
            TurnSettings(
                prices=prices, budget=Budget(**budget) if budget.keys() - {"warn_ratio"} else None, **options
            ),
            Retention(**days),
        )
    except ValidationError as exc:  # the dataclasses' own checks, named as the file names the setting
        message = exc.message
        for python, setting in _SETTING_NAMES.items():
            message = message.replace(python, setting)
        raise ValidationError(_where(source, message)) from None
