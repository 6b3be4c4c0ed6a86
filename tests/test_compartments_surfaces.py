"""Compartments at every entry point: the server's config and its principals, REST and the CLI (entering one,
and the refusal of one outside the clearance, identical to a level above it), the JSON shapes, export and
import, the operator's view and the console's records."""

from __future__ import annotations

import io
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

import stratamem as sm
from stratamem import shapes
from stratamem.cli import cli
from stratamem.errors import ValidationError
from stratamem.operator import OperatorView
from stratamem.server import console_payloads, payloads
from stratamem.server.config import parse_config
from stratamem.server.principals import token_digest
from stratamem.storage.sql.console import ConsoleRecord
from stratamem.tools import definitions
from stratamem.transfer import dump_lines, read_records
from stratamem.turn.render import render_memory_context

HR_TOKEN = "hr-token-0123456789abcdef"
PLAIN_TOKEN = "plain-token-0123456789abc"
OPS_TOKEN = "ops-token-0123456789abcde"

CONFIG = f"""
[compartments]
names = ["HR", "finance"]

[[principals]]
name = "hr"
token_sha256 = "{token_digest(HR_TOKEN)}"
agent = "alice"
clearance = "CONFIDENTIAL"
compartments = ["hr"]

[[principals]]
name = "plain"
token_sha256 = "{token_digest(PLAIN_TOKEN)}"
agent = "alice"
clearance = "CONFIDENTIAL"

[[principals]]
name = "ops"
token_sha256 = "{token_digest(OPS_TOKEN)}"
agent = "alice"
clearance = "RESTRICTED"
operator = true
"""


# the config ------------------------------------------------------------------------------------------


def test_config_declares_compartments_and_each_principal_clearance_carries_its_own(tmp_path):
    config = parse_config(CONFIG, tmp_path / "server.toml")
    assert config.compartments == ("HR", "FINANCE")  # canonical names, in the order declared
    by_name = {p.name: p for p in config.principals}
    assert by_name["hr"].compartments == frozenset({"HR"})
    assert by_name["plain"].compartments == frozenset()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[compartments]\nnames = ["HR"]\nlevels = 1\n', "unknown key(s) in [compartments]: levels"),
        ('[compartments]\nnames = ["H R"]\n', "compartments.names: invalid compartment name"),
        ('[compartments]\nnames = "HR"\n', "compartments.names must be a list of strings"),
        ('[mcp]\ncompartments = ["LEGAL"]\n', "mcp.compartments: LEGAL not in [compartments] names"),
    ],
)
def test_config_mistakes_about_compartments_are_named(tmp_path, text, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        parse_config(text, tmp_path / "bad.toml")


def test_a_principal_naming_an_undeclared_compartment_is_refused_at_load(tmp_path):
    text = CONFIG.replace('compartments = ["hr"]', 'compartments = ["HR", "LEGAL"]')
    with pytest.raises(
        ValidationError, match=r"principals\[0\]\.compartments: LEGAL not in \[compartments\]"
    ):
        parse_config(text, tmp_path / "server.toml")


# REST: a real `stratamem serve` with the config ----------------------------------------------------------


@pytest.fixture
def served(tmp_path):
    pytest.importorskip("uvicorn")
    sys.path.insert(0, str(Path(__file__).parent / "server"))
    from server_support import served_with_config

    with served_with_config(tmp_path, CONFIG) as (url, _):
        yield url


def test_rest_sessions_get_the_principals_compartments_and_enter_them(served):
    import httpx2

    url = served

    def client(token: str) -> httpx2.Client:
        return httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)

    with client(HR_TOKEN) as hr, client(PLAIN_TOKEN) as plain, client(OPS_TOKEN) as ops:
        # serve defined [compartments] at start; the session's clearance comes from the config, not the body
        opened = hr.post("/v1/sessions", json={"compartments": ["FINANCE"]})
        assert opened.status_code == 201, opened.text
        session = opened.json()
        assert session["clearance_label"] == "CONFIDENTIAL+HR" and session["label"] == "PUBLIC"
        sid = session["id"]
        entered = hr.post(f"/v1/sessions/{sid}/enter", json={"compartment": "hr", "reason": "payroll"})
        assert entered.status_code == 200, entered.text
        assert entered.json()["label"] == "PUBLIC+HR"
        assert entered.json()["taint_history"][-1]["new_label"] == "PUBLIC+HR"
        saved = hr.put(f"/v1/sessions/{sid}/memories/pay", json={"content": "salary bands for 2027"})
        assert saved.json() == {
            "saved": True,
            "key": "pay",
            "classification": "PUBLIC",
            "compartments": ["HR"],
        }
        got = hr.get(f"/v1/sessions/{sid}/memories/pay").json()
        assert got["compartments"] == ["HR"]

        # a compartment outside the clearance, defined or not, is refused exactly as a level above it
        above = hr.post(f"/v1/sessions/{sid}/escalate", json={"level": "RESTRICTED"})
        other = hr.post(f"/v1/sessions/{sid}/enter", json={"compartment": "FINANCE"})
        unknown = hr.post(f"/v1/sessions/{sid}/enter", json={"compartment": "LEGAL"})
        assert above.status_code == other.status_code == unknown.status_code == 403
        assert above.json() == other.json() == unknown.json()
        assert above.json()["error"]["code"] == "POLICY_BLOCKED"
        assert hr.post(f"/v1/sessions/{sid}/enter", json={}).status_code == 400

        # a token of the same agent without HR cannot use the session, not even an operator token
        assert plain.get(f"/v1/sessions/{sid}").status_code == 404
        assert ops.get(f"/v1/sessions/{sid}").status_code == 404
        # and a session of a principal without compartments shows as before: no label fields
        own = plain.post("/v1/sessions").json()
        assert "label" not in own and "clearance_label" not in own
        assert plain.get(f"/v1/sessions/{own['id']}/memories/pay").json() == {"found": False, "key": "pay"}


# the CLI ---------------------------------------------------------------------------------------------------


@pytest.fixture
def run(tmp_path):
    db = str(tmp_path / "cli.db")
    store = sm.Store(db)
    store.define_compartments("HR", "FINANCE")
    store.close()
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, ["--db", db, *args], catch_exceptions=False)

    invoke.db = db  # type: ignore[attr-defined]
    return invoke


def test_cli_compartment_clears_and_enters_the_one_shot_session(run):
    saved = run("--json", "--compartment", "hr", "save", "pay", "salary bands")
    assert saved.exit_code == 0, saved.output
    assert json.loads(saved.output) == {
        "saved": True,
        "key": "pay",
        "classification": "PUBLIC",
        "compartments": ["HR"],
    }
    assert run("--json", "get", "pay").exit_code == 1  # not without the compartment
    got = run("get", "pay", "--compartment", "HR", "--json")  # also after the command
    assert json.loads(got.output)["compartments"] == ["HR"]
    assert "pay [PUBLIC+HR]" in run("--compartment", "HR", "list").output
    found = json.loads(run("--json", "--compartment", "HR", "search", "salary").output)
    assert [(h["key"], h["compartments"]) for h in found["results"]] == [("pay", ["HR"])]
    assert json.loads(run("--json", "list").output)["memories"] == []


def test_cli_session_enter_and_the_refusal_like_a_level_above_the_clearance(run):
    store = sm.Store(run.db)
    sid = store.session("main", "named", clearance="INTERNAL", compartments={"HR"}).id
    store.close()
    entered = run("--json", "session", "enter", "hr", "--session", sid)
    assert entered.exit_code == 0, entered.output
    shape = json.loads(entered.output)
    assert shape["label"] == "PUBLIC+HR" and shape["clearance_label"] == "INTERNAL+HR"
    assert "taint=PUBLIC+HR" in run("session", "show", "--session", sid).output

    above = run("--json", "--session", sid, "--taint", "CONFIDENTIAL", "list")
    outside = run("--json", "session", "enter", "FINANCE", "--session", sid)
    undefined = run("--json", "session", "enter", "LEGAL", "--session", sid)
    resumed = run("--json", "--session", sid, "--compartment", "FINANCE", "list")
    assert above.exit_code == outside.exit_code == undefined.exit_code == resumed.exit_code == 4
    assert json.loads(above.output) == json.loads(outside.output) == json.loads(undefined.output)
    assert json.loads(resumed.output) == json.loads(above.output)
    assert json.loads(above.output)["error"]["code"] == "POLICY_BLOCKED"


# shapes ------------------------------------------------------------------------------------------------------


def test_shapes_name_compartments_only_when_a_record_has_them():
    store = sm.Store(":memory:")
    plain = store.session("a").save("plain", "nothing special")
    unchanged = ("key", "content", "classification", "tags", "updated_at", "occurred_at")
    assert tuple(shapes.list_entry(plain)) == unchanged
    assert shapes.saved(plain) == {"saved": True, "key": "plain", "classification": "PUBLIC"}
    assert "compartments" not in plain.to_dict()

    store.define_compartments("HR", "FINANCE")
    session = store.session("a", compartments={"FINANCE", "HR"})
    session.enter("HR", "x")
    session.enter("FINANCE", "x")
    labelled = session.save("both", "quarterly payroll")
    entry = shapes.list_entry(labelled)
    assert list(entry)[:5] == ["key", "content", "classification", "compartments", "tags"]
    assert entry["compartments"] == ["FINANCE", "HR"]  # sorted
    hit = session.search("payroll")[0]
    assert shapes.search_entry(hit)["compartments"] == ["FINANCE", "HR"]
    assert payloads.session(session.record, None, store.compartments.names_of)["label"] == "PUBLIC+FINANCE+HR"
    store.close()


def test_tool_definitions_and_the_recall_block_name_no_compartment():
    store = sm.Store(":memory:")
    store.define_compartments("ZEBRA", "QUOKKA")
    writer = store.session("a", compartments={"ZEBRA", "QUOKKA"})
    writer.enter("ZEBRA", "x")
    writer.save("pay", "salary bands for the team")
    assert not any(
        name in json.dumps(definitions(d))
        for d in ("openai", "anthropic", "mcp")
        for name in ("ZEBRA", "QUOKKA")
    )
    # the session that can read the record: its block holds the content and no label
    block = render_memory_context(writer, "salary bands", "interactive")
    assert "salary bands" in block and "ZEBRA" not in block and "QUOKKA" not in block
    # one in the other compartment: nothing of it, and no name
    other = store.session("a", compartments={"QUOKKA"})
    other.enter("QUOKKA", "x")
    assert render_memory_context(other, "salary bands", "interactive") == ""
    store.close()


# export / import ----------------------------------------------------------------------------------------------


def _labelled_store(path: str) -> sm.Store:
    store = sm.Store(path)
    store.define_compartments("HR", "FINANCE")
    session = store.session("a", clearance="CONFIDENTIAL", compartments={"HR", "FINANCE"})
    session.save("open", "the office opens at nine")
    session.escalate("CONFIDENTIAL", "x")
    session.enter("FINANCE", "x")
    session.save("budget", "travel budget for spring")
    session.enter("HR", "x")
    session.save("budget", "budget including salaries")  # another label: its own version
    return store


def test_export_then_import_keeps_every_label(tmp_path):
    source = _labelled_store(str(tmp_path / "a.db"))
    lines = "".join(dump_lines(source.export()))
    source.close()
    assert '"compartments": ["FINANCE"]' in lines and '"compartments": ["FINANCE", "HR"]' in lines

    target = sm.Store(str(tmp_path / "b.db"))
    target.define_compartments("FINANCE", "LEGAL", "HR")  # other bits: imported by name
    memories, _ = read_records(io.StringIO(lines), target.max_content_bytes, target.labelled)
    assert target.import_memories(memories) == 3
    labels = sorted((m.key, m.label.name) for m in target.export())
    assert labels == [
        ("budget", "CONFIDENTIAL+FINANCE"),
        ("budget", "CONFIDENTIAL+FINANCE+HR"),
        ("open", "PUBLIC"),
    ]
    finance = target.session("a", clearance="CONFIDENTIAL", compartments={"FINANCE"})
    finance.escalate("CONFIDENTIAL", "x")
    assert finance.get("budget") is None
    finance.enter("FINANCE", "x")
    assert finance.get("budget").content == "travel budget for spring"
    target.close()


def test_import_of_an_undefined_compartment_is_refused_whole(tmp_path, run):
    source = _labelled_store(str(tmp_path / "a.db"))
    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(dump_lines(source.export())), encoding="utf-8")
    source.close()
    # the store of `run` defines HR and FINANCE; one without HR refuses the file and imports nothing
    lacking = sm.Store(str(tmp_path / "c.db"))
    lacking.define_compartments("FINANCE")
    lacking.close()
    refused = CliRunner().invoke(cli, ["--db", str(tmp_path / "c.db"), "--json", "import", str(dump)])
    assert refused.exit_code == 2
    message = json.loads(refused.output)["error"]["message"]
    assert "nothing was imported" in message and re.search(r"line \d: unknown compartment 'HR'", message)
    assert list(sm.Store(str(tmp_path / "c.db")).export()) == []

    imported = run("--json", "import", str(dump))
    assert json.loads(imported.output) == {"imported": 3}
    exported = run("export")
    assert exported.exit_code == 0
    names = sorted(json.loads(line).get("compartments", []) for line in exported.output.splitlines() if line)
    assert names == [[], ["FINANCE"], ["FINANCE", "HR"]]


def test_a_markdown_export_puts_compartmented_records_in_their_label_folders(tmp_path):
    from stratamem.md_transfer import export_markdown

    store = _labelled_store(str(tmp_path / "a.db"))
    export_markdown(store.export(), str(tmp_path / "md"))
    folders = {p.parent.name for p in (tmp_path / "md").rglob("*.md")}
    assert any("+" in name for name in folders), folders  # a label folder such as CONFIDENTIAL+FINANCE+HR
    store.close()


# the operator's view and the console ----------------------------------------------------------------------------


def test_operator_view_and_console_records_name_the_labels(tmp_path):
    """Rows hold a label's bits; the view names what it hands the console, whose JSON shows the label (the
    console's own reads of compartmented rows are its storage side's: until then they stay hidden)."""
    store = _labelled_store(str(tmp_path / "a.db"))
    view = OperatorView.open(store, "RESTRICTED", "test")
    reader = store.session("a", clearance="CONFIDENTIAL", compartments={"HR", "FINANCE"})
    reader.escalate("CONFIDENTIAL", "x")
    reader.enter("FINANCE", "x")
    reader.enter("HR", "x")
    stored = reader.get("budget")
    as_a_row = replace(stored, compartments=frozenset())  # what a backend row gives: the code alone
    (named,) = view._named([ConsoleRecord(7, as_a_row, None, "shown")])
    assert named.memory.compartments == {"FINANCE", "HR"}
    shown = console_payloads.memory(named.memory)
    assert shown["label"] == "CONFIDENTIAL+FINANCE+HR" and shown["compartments"] == ["FINANCE", "HR"]
    (plain,) = view.versions("a", "open")
    assert "label" not in console_payloads.memory(plain.memory)
    assert "compartments" not in console_payloads.memory(plain.memory)
    store.close()


# stratamem mcp (stdio) ---------------------------------------------------------------------------------------------


def test_mcp_stdio_session_is_cleared_for_and_enters_its_compartments(tmp_path):
    pytest.importorskip("mcp")
    from stratamem.server.stdio import open_stdio_session, resolve_settings

    config = parse_config(
        CONFIG + '\n[mcp]\nagent = "alice"\nclearance = "INTERNAL"\ncompartments = ["hr"]\n',
        tmp_path / "server.toml",
    )
    settings = resolve_settings({}, {}, config)
    assert settings.compartments == {"HR"} and settings.declared == ("HR", "FINANCE")
    store = sm.Store(":memory:")
    session = open_stdio_session(store, settings)
    assert store.compartments.current().names == ("HR", "FINANCE")  # the config's, defined at start
    assert session.label.name == "PUBLIC+HR" and session.clearance_label.name == "INTERNAL+HR"
    # a flag wins over the table; a compartment outside what the store defines is refused by name
    flagged = resolve_settings({"compartments": ("FINANCE",)}, {}, config)
    assert open_stdio_session(store, flagged).label.name == "PUBLIC+FINANCE"
    with pytest.raises(ValidationError, match="unknown compartment 'LEGAL'"):
        open_stdio_session(store, resolve_settings({"compartments": ("LEGAL",)}, {}, config))
    store.close()
