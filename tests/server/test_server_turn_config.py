"""Turn prices, budgets and retention for `stratamem serve` / `mcp`: config file, environment, checks."""

from __future__ import annotations

from decimal import Decimal

import pytest
from click.testing import CliRunner
from server_support import write_config

from stratamem.cli import cli
from stratamem.errors import ValidationError
from stratamem.server import serve as serve_module
from stratamem.server.config import load_config
from stratamem.turn.costs import ModelPrice

TURNS = """
[turns]
history_budget_tokens = 8000
daily_budget_usd = 5
monthly_budget_usd = "100.50"
[turns.prices."gpt-4o"]
input = 2.5
output = 10
cached_input = 1.25
[turns.prices.small]
input = 0
output = 0.6

[retention]
transcript_days = 7
autosave_ttl_days = false
ledger_days = 90
"""


def test_the_config_file_sets_prices_budgets_and_retention(tmp_path):
    turns = load_config(write_config(tmp_path, TURNS)).turn_config({})
    assert turns.settings.prices == {
        "gpt-4o": ModelPrice(Decimal("2.5"), Decimal("10"), Decimal("1.25")),
        "small": ModelPrice(Decimal("0"), Decimal("0.6")),
    }
    assert turns.settings.history_budget_tokens == 8000
    budget = turns.settings.budget
    assert budget is not None and (budget.daily_usd, budget.monthly_usd) == (Decimal(5), Decimal("100.50"))
    assert (turns.retention.transcript_days, turns.retention.autosave_ttl_days) == (7, None)
    assert turns.retention.ledger_days == 90


def test_the_environment_wins_over_the_file(tmp_path):
    env = {
        "STRATAMEM_PRICES": '{"other": {"input": 1, "output": 2}}',
        "STRATAMEM_DAILY_BUDGET_USD": "2",
        "STRATAMEM_TRANSCRIPT_DAYS": "never",
        "STRATAMEM_LEDGER_DAYS": "30",
    }
    turns = load_config(write_config(tmp_path, TURNS)).turn_config(env)
    assert list(turns.settings.prices) == ["other"]
    assert turns.settings.budget is not None and turns.settings.budget.daily_usd == Decimal(2)
    assert turns.retention.transcript_days is None and turns.retention.ledger_days == 30


def test_defaults_without_any_setting(tmp_path):
    turns = load_config(write_config(tmp_path)).turn_config({})
    assert turns.settings.prices == {} and turns.settings.budget is None
    assert turns.retention.transcript_days == 30 and turns.retention.ledger_days == 400


@pytest.mark.parametrize(
    "price",
    ["-1", "nan", "inf", '"-0.5"', '"NaN"', '"cheap"', "true", "[1]"],
)
def test_a_bad_price_is_refused_when_the_file_is_read(tmp_path, price):
    text = f'[turns.prices."gpt-4o"]\ninput = {price}\noutput = 1\n'
    with pytest.raises(ValidationError) as refused:
        load_config(write_config(tmp_path, text))
    assert refused.value.code == "VALIDATION_ERROR"
    assert "turns.prices.'gpt-4o'.input" in refused.value.message


@pytest.mark.parametrize(
    "text",
    [
        "[turns]\ndaily_budget_usd = -5\n",
        "[turns]\nhistory_window = 0\n",
        "[turns]\nhistory_window = 1.5\n",
        "[turns]\nbudget = 1\n",
        '[turns.prices."m"]\ninput = 1\n',
        '[turns.prices."m"]\ninput = 1\noutput = 1\nfree = true\n',
        "[retention]\ntranscript_days = -1\n",
        "[retention]\nledger_days = nan\n",
        '[retention]\nautosave_ttl_days = "soon"\n',
        "[retention]\nforever = true\n",
    ],
)
def test_bad_turn_settings_are_refused_with_a_stable_code(tmp_path, text):
    with pytest.raises(ValidationError) as refused:
        load_config(write_config(tmp_path, text))
    assert refused.value.code == "VALIDATION_ERROR"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("STRATAMEM_PRICES", '{"m": {"input": -1, "output": 1}}'),
        ("STRATAMEM_PRICES", '{"m": {"input": NaN, "output": 1}}'),
        ("STRATAMEM_PRICES", "not json"),
        ("STRATAMEM_DAILY_BUDGET_USD", "NaN"),
        ("STRATAMEM_LEDGER_DAYS", "-3"),
    ],
)
def test_serve_refuses_to_start_with_a_bad_price_or_retention(tmp_path, monkeypatch, name, value):
    started = []
    monkeypatch.setattr(serve_module.uvicorn.Server, "run", lambda self: started.append(self))
    monkeypatch.setenv(name, value)
    config = write_config(tmp_path)
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "m.db"), "serve", "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert name in result.output and not started


def test_serve_runs_turns_with_the_operator_settings(tmp_path, monkeypatch):
    built = {}
    real = serve_module.ServerState

    def capture(store, principals, **options):
        built["store"], built["options"] = store, options
        return real(store, principals, **options)

    monkeypatch.setattr(serve_module.uvicorn.Server, "run", lambda self: None)
    monkeypatch.setattr(serve_module, "ServerState", capture)
    config = write_config(tmp_path, TURNS)
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "m.db"), "serve", "--config", str(config)])
    assert result.exit_code == 0, result.output
    settings = built["options"]["turn_settings"]
    assert settings.prices["gpt-4o"].output_per_million == Decimal(10)
    assert settings.budget.daily_usd == Decimal(5)
    assert built["store"].retention.transcript_days == 7
