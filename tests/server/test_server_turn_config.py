"""Turn settings for `stratamem serve` / `mcp` (all a Python Turn takes): config file, environment, checks."""

from __future__ import annotations

import dataclasses
import inspect
import json
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from server_support import auth, free_port, write_config
from starlette.testclient import TestClient

import stratamem as sm
from stratamem.cli import cli
from stratamem.errors import ValidationError
from stratamem.server import serve as serve_module
from stratamem.server import turn_config
from stratamem.server.config import load_config
from stratamem.server.turn_config import parse_turn_config
from stratamem.turn import Turn, TurnSettings
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
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "m.db"), "serve", "--port", str(free_port()), "--config", str(config)]
    )
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
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "m.db"), "serve", "--port", str(free_port()), "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    settings = built["options"]["turn_settings"]
    assert settings.prices["gpt-4o"].output_per_million == Decimal(10)
    assert settings.budget.daily_usd == Decimal(5)
    assert built["store"].retention.transcript_days == 7


# Everything a Python Turn takes ------------------------------------------------------------------

SERVED = """
[turns.autosave]
enabled = false
[turns.context]
max_entries = 1
min_coverage = 0
[turns.tool_limits]
max_tool_result_chars = 300
"""

# A value for each setting other than its default, where the type alone does not say what is valid.
_DIFFERENT = {"origins": ["agent"], "file_producing_tools": ["render_chart"], "category": "daily"}


def _different(name, default):
    if name in _DIFFERENT:
        return _DIFFERENT[name]
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default + 1
    if isinstance(default, float):
        return 0.5 if default != 0.5 else 0.25
    raise AssertionError(f"no test value for {name} ({type(default).__name__}): add one to _DIFFERENT")


def _toml(value) -> str:
    return json.dumps(value)  # a JSON number, boolean, string or list of strings is the same in TOML


def test_every_field_of_turn_settings_is_a_key_of_the_file_or_named_code_only():
    assert turn_config.UNREADABLE == []
    fields = {f.name for f in dataclasses.fields(TurnSettings)}
    by_file = set(turn_config.SCALARS) | set(turn_config.SECTIONS) | {"prices", "budget"}
    assert fields == by_file | set(turn_config.CODE_ONLY)
    for name, cls in turn_config.SECTION_CLASSES.items():
        assert set(turn_config.SECTIONS[name]) == {f.name for f in dataclasses.fields(cls)}


def test_a_turns_other_options_come_from_the_request_or_the_server():
    # origin and system_prompt: each request; policy: [policy]; events: the store's bus; settings: [turns]
    options = set(inspect.signature(Turn.__init__).parameters) - {"self", "session"}
    assert options == {"origin", "settings", "policy", "system_prompt", "events"}


def test_every_setting_a_turn_takes_is_read_from_the_file(tmp_path):
    defaults = TurnSettings()
    lines, expected = [], {}
    for name in turn_config.SCALARS:
        value = _different(name, getattr(defaults, name))
        lines.append(f"{name} = {_toml(value)}")
        expected[name] = value
    for section in turn_config.SECTIONS:
        lines.append(f"[turns.{section}]")
        for name in turn_config.SECTIONS[section]:
            value = _different(name, getattr(getattr(defaults, section), name))
            lines.append(f"{name} = {_toml(value)}")
            expected[f"{section}.{name}"] = value
    settings = load_config(write_config(tmp_path, "[turns]\n" + "\n".join(lines))).turn_config({}).settings
    for dotted, value in expected.items():
        got = settings
        for part in dotted.split("."):
            got = getattr(got, part)
        assert got == (frozenset(value) if isinstance(value, list) else value), dotted


def test_the_docs_list_every_key_the_file_sets():
    text = (Path(__file__).resolve().parents[2] / "docs" / "turns.md").read_text(encoding="utf-8")
    block = text.split("```toml\n", 1)[1].split("```", 1)[0]
    data = tomllib.loads(block)
    parse_turn_config(data["turns"], data["retention"], None)  # the documented example is valid
    documented = {f"retention.{key}" for key in data["retention"]}
    for key, value in data["turns"].items():
        if key in turn_config.SECTIONS:
            documented |= {f"turns.{key}.{name}" for name in value}
        else:
            documented.add(f"turns.{key}")
    assert set(turn_config.settable_keys()) == documented


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[turns.context]\nmax_entries = -1\n", "turns.context.max_entries"),
        ("[turns.context]\nmax_entries = 1.5\n", "turns.context.max_entries"),
        ("[turns.context]\nmin_coverage = 2\n", "turns.context.relative_floor and min_coverage"),
        ("[turns.context]\nsuppress = 1\n", "turns.context.suppress"),
        ("[turns.context]\nhalf_life_days = nan\n", "turns.context.half_life_days"),
        ("[turns.context]\nfloor = 1\n", "[turns.context]: floor"),
        ('[turns.autosave]\nenabled = "no"\n', "turns.autosave.enabled"),
        ('[turns.autosave]\norigins = ["webhook"]\n', "turns.autosave.origins"),
        ('[turns.autosave]\norigins = "interactive"\n', "turns.autosave.origins"),
        ('[turns.autosave]\ncategory = ""\n', "turns.autosave.category"),
        ("[turns.tool_limits]\nmax_tool_result_chars = -1\n", "turns.tool_limits"),
        ("[turns]\ncontext = 4\n", "turns.context must be a table"),
        ("[turns]\nhistory_window = 100000\n", "turns.history_window"),
        ("[turns]\ndaily_budget_usd = 1\nbudget_warn_ratio = 2\n", "turns.budget_warn_ratio"),
    ],
)
def test_a_bad_turn_setting_stops_the_server_naming_it(tmp_path, text, named):
    with pytest.raises(ValidationError) as refused:
        load_config(write_config(tmp_path, text))
    assert refused.value.code == "VALIDATION_ERROR"
    assert named in refused.value.message and "server.toml" in refused.value.message


def _one_turn(app) -> tuple[str, dict]:
    """Over REST: a turn that asks about both memories and records a 5,000-character tool result."""
    rest = TestClient(app, base_url="http://127.0.0.1:8000", headers=auth("alice"))
    sid = rest.post("/v1/sessions").json()["id"]
    message = "What do we know about the Lisbon office move and rent?"
    begun = rest.post(f"/v1/sessions/{sid}/turns", json={"user_message": message})
    assert begun.status_code == 201, begun.text
    base = f"/v1/sessions/{sid}/turns/{begun.json()['turn_id']}"
    calls = {"tool_calls": [{"id": "c1", "name": "dump", "arguments": "{}"}]}
    assert rest.post(f"{base}/tool-calls", json=calls).status_code == 200
    result = {"call_id": "c1", "tool_name": "dump", "output": "x" * 5000}
    stored = rest.post(f"{base}/tool-results", json=result)
    assert stored.status_code == 200, stored.text
    return begun.json()["messages"][-1]["content"], stored.json()


def test_the_served_turn_api_runs_with_the_files_settings(tmp_path, monkeypatch):
    db = tmp_path / "m.db"
    with sm.open_store(str(db)) as store:
        writer = store.session("alice")
        writer.save("lisbon_move", "The Lisbon office moves in May")
        writer.save("lisbon_rent", "The Lisbon office rent is due in June")
    turns = []
    monkeypatch.setattr(
        serve_module.uvicorn.Server, "run", lambda self: turns.append(_one_turn(self.config.app))
    )
    config = write_config(tmp_path, SERVED)
    result = CliRunner().invoke(
        cli, ["--db", str(db), "serve", "--port", str(free_port()), "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    ((prompt, stored),) = turns
    assert prompt.count("\n- lisbon_") == 1  # [turns.context] max_entries = 1
    assert stored["truncated"] is True and len(stored["message"]["content"]) < 1000  # [turns.tool_limits]
    with sm.open_store(str(db)) as store:  # [turns.autosave] enabled = false: the message is no memory
        assert [m.key for m in store.session("alice").list()] == ["lisbon_move", "lisbon_rent"]


def test_the_module_says_what_model_price_does_with_a_bad_price():
    # ModelPrice refuses a bad price when it is built; the server's reading says the same, not "as zero".
    for bad in (-1, "nan", "cheap"):
        with pytest.raises(ValidationError):
            ModelPrice(bad, 1)
    doc = " ".join((turn_config.__doc__ or "").split())
    assert "as zero" not in doc and "checked at startup, as ``ModelPrice``" in doc
