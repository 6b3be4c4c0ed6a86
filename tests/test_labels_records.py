"""Need-to-know beyond memories: the graph, transcripts, usage, the audit log and the console's reads.

An HR-compartment session's writes are stored at its label (CONFIDENTIAL+HR), invisible to a FINANCE
session at the same level and to an uncompartmented one, and visible to a session whose taint covers them.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from decimal import Decimal
from itertools import product

import pytest
from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli
from stratamem.labels import reads, within_sql
from stratamem.levels import Level
from stratamem.operator import OperatorView
from stratamem.storage.sql import console
from stratamem.tools import execute
from stratamem.turn import CostLedger, Message, Transcript, TurnSettings
from stratamem.turn.costs import Budget

SECRET = "salary of Alice is 250k"
HR_CODE = int(Level.CONFIDENTIAL) | (1 << 2)  # HR is the first compartment defined
FINANCE_BIT = 1 << 3


@pytest.fixture
def world(tmp_path):
    """A SQLite store and four sessions of one agent: HR and FINANCE at CONFIDENTIAL, a plain
    CONFIDENTIAL one, and a RESTRICTED+HR one whose taint covers HR's writes."""
    path = tmp_path / "store.db"
    store = sm.open_store(str(path))
    store.define_compartments("HR", "FINANCE")

    def at(level: str, compartment: str | None) -> sm.Session:
        names = {compartment} if compartment else set()
        session = store.session("main", clearance=level, compartments=names)
        session.escalate(level, "cleared for the test")
        if compartment:
            session.enter(compartment, "need to know")
        return session

    sessions = {
        "hr": at("CONFIDENTIAL", "HR"),
        "finance": at("CONFIDENTIAL", "FINANCE"),
        "plain": at("CONFIDENTIAL", None),
        "cover": at("RESTRICTED", "HR"),
    }
    yield store, sessions, path
    store.close()


def _codes(path, sql: str) -> set[int]:
    with sqlite3.connect(path) as conn:
        return {int(r[0]) for r in conn.execute(sql)}


def test_within_sql_is_the_label_order() -> None:
    conn = sqlite3.connect(":memory:")
    codes = [level | (mask << 2) for level in range(4) for mask in range(4)]
    for a, b in product(codes, codes):
        (got,) = conn.execute(f"SELECT {within_sql(str(a), str(b))}").fetchone()
        assert bool(got) == reads(b, a), (a, b)


def test_graph_writes_carry_the_label_and_reads_need_it(world) -> None:
    _, s, path = world
    hr = s["hr"]
    node = hr.graph.capture("Alice", "person", content="payroll record", observations=[SECRET])
    hr.graph.capture("Bob", "person", content="payroll manager")
    edge = hr.graph.relate("Bob", "Alice", "manages")
    assert node.level == Level.CONFIDENTIAL and edge.level == Level.CONFIDENTIAL
    for table in ("graph_nodes", "graph_observations", "graph_edges", "graph_postings", "graph_part_stats"):
        assert _codes(path, f"SELECT level FROM {table}") == {HR_CODE}, table

    for name in ("finance", "plain"):
        other = s[name]
        assert other.graph.get("Alice") is None
        assert other.graph.search("salary payroll") == []
        assert other.graph.open(["Alice", "Bob"]) == ([], [])
        page = other.graph.read()
        assert not page.nodes and not page.edges
        assert other.graph.stats().nodes == 0

    cover = s["cover"]
    found = cover.graph.get("Alice")
    assert found is not None and [o.text for o in found.observations] == [SECRET]
    assert [h.node.name for h in cover.graph.search("salary")] == ["Alice"]
    nodes, edges = cover.graph.open(["Alice"])
    assert [n.name for n in nodes] == ["Alice"] and [(e.source, e.target) for e in edges] == [
        ("Bob", "Alice")
    ]
    assert {n.name for n in cover.graph.read().nodes} == {"Alice", "Bob"}

    # deletes act at exactly the taint's label: only HR's own session removes HR's versions
    assert s["plain"].graph.delete_nodes(["Alice"]) == [] and cover.graph.delete_nodes(["Alice"]) == []
    assert hr.graph.delete_nodes(["Alice"]) == ["Alice"] and cover.graph.get("Alice") is None


def test_graph_rules_compare_labels_not_integers(world) -> None:
    """Rules between two rows' labels use the label order, not the integers: PUBLIC+HR (4) is a smaller
    integer than PUBLIC+FINANCE (8) but not below it."""
    store, _, path = world

    def public(compartment: str | None) -> sm.Session:
        session = store.session(
            "main", clearance="PUBLIC", compartments={compartment} if compartment else set()
        )
        if compartment:
            session.enter(compartment, "need to know")
        return session

    plain, hr, fin = public(None), public("HR"), public("FINANCE")
    hr.graph.capture("Carol", "person", content="hr only")
    assert fin.graph.get("Carol") is None
    # a FINANCE version next to the HR one: each compartment sees its own
    fin.graph.capture("Carol", "person", content="finance view")
    assert fin.graph.get("Carol").content == "finance view"  # type: ignore[union-attr]
    assert hr.graph.get("Carol").content == "hr only"  # type: ignore[union-attr]

    # an observation at PUBLIC+FINANCE whose node's only live version left is PUBLIC+HR is orphaned
    plain.graph.capture("Erin", "person", content="on the staff list")
    fin.graph.add_observations([("Erin", ["finance note"])])
    hr.graph.capture("Erin", "person", content="hr file")
    plain.graph.delete_nodes(["Erin"])
    with sqlite3.connect(path) as conn:
        (anchored,) = conn.execute(
            "SELECT anchored FROM graph_observations WHERE text = 'finance note'"
        ).fetchone()
    assert anchored == 0
    assert fin.graph.get("Erin") is None
    assert "Erin" not in {h.node.name for h in fin.graph.search("finance note")}
    # FINANCE's search statistics count exactly what it sees: its own Carol, nothing of HR's
    n_docs = fin.graph.stats().nodes
    assert n_docs == 1


def test_transcript_and_usage_carry_the_label(world) -> None:
    store, s, path = world
    hr = s["hr"]
    Transcript(hr).append(Message("user", SECRET))
    CostLedger(hr).record("model-x", 10, 5, cost_usd="1.50")
    assert _codes(path, "SELECT level FROM turn_messages") == {HR_CODE}
    assert _codes(path, "SELECT level FROM turn_usage") == {HR_CODE}
    budget = Budget(daily_usd=Decimal(1))
    for name in ("finance", "plain"):
        assert Transcript(s[name]).page(transcript_id=hr.id) == ([], 0)
        assert CostLedger(s[name]).records() == []
        assert CostLedger(s[name]).check_budget(budget).daily_spent == Decimal(0)
    rows, total = Transcript(s["cover"]).page(transcript_id=hr.id)
    assert total == 1 and rows[0].message.content == SECRET and rows[0].level == "CONFIDENTIAL"
    assert [r.level for r in CostLedger(s["cover"]).records()] == [Level.CONFIDENTIAL]
    assert CostLedger(s["cover"]).check_budget(budget).daily_spent == Decimal("1.50")
    assert [r.level for r in store.usage()] == [Level.CONFIDENTIAL]  # the operator's accounting: every label


def test_turn_history_and_recall_need_the_label(world) -> None:
    _, s, _ = world
    settings = TurnSettings()
    hr = s["hr"]
    hr.save("payroll", SECRET)
    turn = hr.turn("what is in the payroll file?", settings=settings)
    assert any(SECRET in m.content for m in turn.messages())  # recalled at its own label
    turn.end("Alice earns 250k")
    for name in ("finance", "plain"):
        prompt = s[name].turn("what is in the payroll file?", settings=settings).messages()
        assert all("250k" not in m.content for m in prompt)
    # a new session of the HR agent: the old transcript comes back only once the taint covers it
    fresh = hr.reset()
    assert Transcript(fresh).page(transcript_id=hr.id)[1] == 0
    fresh.escalate("CONFIDENTIAL", "cleared")
    assert Transcript(fresh).page(transcript_id=hr.id)[1] == 0
    fresh.enter("HR", "need to know")
    assert Transcript(fresh).page(transcript_id=hr.id)[1] == 2
    assert any("250k" in m.content for m in s["cover"].turn("payroll?", settings=settings).messages())


def test_audit_events_are_read_by_label(world) -> None:
    store, s, path = world
    s["hr"].graph.capture("Alice", "person", content="payroll record")
    s["finance"].graph.capture("Ledger", "account", content="q3")

    def written(clearance: str, owner: str | None = None) -> set[str]:
        return {
            ",".join(e.keys)
            for e in store.audit_events(clearance, owner=owner)
            if e.operation == "graph.write"
        }

    assert written("CONFIDENTIAL") == set()
    assert written("CONFIDENTIAL+FINANCE") == {"Ledger"}
    assert written("CONFIDENTIAL+HR") == {"Alice"}
    assert written("RESTRICTED+HR+FINANCE") == {"Alice", "Ledger"}
    hr_events = [e for e in store.audit_events("CONFIDENTIAL+HR") if e.operation == "graph.write"]
    assert hr_events[0].taint == Level.CONFIDENTIAL and hr_events[0].taint_code == HR_CODE
    # operator events (no session) need a reader cleared for RESTRICTED, compartments or not
    assert all(e.session_id is not None for e in store.audit_events("CONFIDENTIAL+HR+FINANCE"))
    assert any(e.session_id is None for e in store.audit_events("RESTRICTED"))
    assert store.verify_audit() is None

    # the CLI reads with a label too
    def shown(clearance: str) -> set[str]:
        out = CliRunner().invoke(
            cli, ["--db", str(path), "--json", "audit", "show", "--clearance", clearance]
        )
        assert out.exit_code == 0, out.output
        events = json.loads(out.output)["events"]
        return {",".join(e["keys"]) for e in events if e["operation"] == "graph.write"}

    assert shown("CONFIDENTIAL") == set() and shown("confidential+hr") == {"Alice"}


def test_console_reads_clearance_as_a_label(world) -> None:
    store, s, _ = world
    s["hr"].save("payroll", SECRET)
    s["plain"].save("handbook", "the staff handbook")
    view = OperatorView.open(store, "RESTRICTED", "op")
    now = datetime.now(UTC)
    assert [r.memory.key for r in view.memories(view.query("main"))] == ["handbook"]
    assert view.versions("main", "payroll") == []
    assert all(x.record.taint_code < 4 for x in view.sessions())
    assert all(r.event is None or r.event.taint_code < 4 for r in view.audit_log(limit=200))
    assert {a.agent_id: a.live for a in view.agents()} == {"main": {"CONFIDENTIAL": 1}}

    cleared = int(Level.RESTRICTED) | (1 << 2)  # RESTRICTED+HR

    def read(reader):
        return store.backend.transactions.operator(now, console.read_body(reader), read_only=True)

    rows = read(lambda run, d: console.memories(run, d, console.MemoryQuery(cleared, "main"), now))
    assert {r.memory.key: (r.memory.level, r.memory.label_code) for r in rows} == {
        "payroll": (Level.CONFIDENTIAL, HR_CODE),
        "handbook": (Level.CONFIDENTIAL, int(Level.CONFIDENTIAL)),
    }
    assert store.compartments.named(rows[0].memory).compartments in ({"HR"}, frozenset())
    ref = next(r.ref for r in rows if r.memory.key == "payroll")
    assert read(lambda run, d: console.record(run, d, int(Level.RESTRICTED), ref, now)) is None
    assert read(lambda run, d: console.record(run, d, cleared, ref, now)).state == "shown"  # type: ignore[union-attr]
    summary = read(lambda run, d: console.agents(run, d, cleared, None, 10, now))
    assert summary[0].live == {"CONFIDENTIAL": 2}  # labels of one level add up per level name
    taints = {
        x.record.id: x.record.taint_code
        for x in read(lambda run, d: console.sessions(run, d, cleared, None, None, 50))
    }
    assert taints[s["hr"].id] == HR_CODE and s["finance"].id not in taints
    events = read(lambda run, d: console.audit(run, d, cleared, None, 200))
    assert any(r.event and r.event.taint_code == HR_CODE for r in events)
    assert not any(r.event and r.event.taint_code & FINANCE_BIT for r in events)


def test_every_event_of_a_compartmented_session_carries_its_label(world) -> None:
    """Policy decisions (a recall's context injection) and tool calls name lineage ids and keys: an event
    at the level alone would show them to a reader without the compartment."""
    store, s, _ = world
    hr = s["hr"]
    hr.save("payroll", SECRET)
    turn = hr.turn("what is in the payroll file?", settings=TurnSettings())
    turn.messages()
    turn.end("noted")
    execute(hr, "memory_recall", {"query": "payroll"})
    events = [e for e in store.audit_events("RESTRICTED+HR") if e.session_id == hr.id]
    operations = {e.operation for e in events}
    assert {"policy.decision", "tool.call", "transcript.append", "save"} <= operations
    after_enter = [e for e in events if e.operation not in ("session.open", "escalate")]
    assert {e.taint_code for e in after_enter} == {HR_CODE}, {
        (e.operation, e.taint_code) for e in after_enter
    }
    assert not [e for e in store.audit_events("RESTRICTED") if e.session_id == hr.id and e.taint_code >= 4]


def test_console_view_opened_at_a_label_shows_each_rows_label(world) -> None:
    store, s, _ = world
    s["hr"].save("payroll", SECRET)
    s["finance"].save("ledger", "q3 numbers")
    view = OperatorView.open(store, "RESTRICTED+HR", "op")
    assert view.clearance == Level.RESTRICTED and view.clearance_code == int(Level.RESTRICTED) | (1 << 2)
    shown = {r.memory.key: r.memory.label.name for r in view.memories(view.query("main"))}
    assert shown == {"payroll": "CONFIDENTIAL+HR"}
    assert [r.memory.compartments for r in view.versions("main", "payroll")] == [frozenset({"HR"})]
    assert [h.memory.key for h in view.search("main", "salary Alice")] == ["payroll"]
    opened = [e for e in store.audit_events("RESTRICTED+HR") if e.operation == "console.memories"]
    assert opened and opened[-1].taint_code == view.clearance_code  # the read's event is at the view's label
    assert not [e for e in store.audit_events("RESTRICTED") if e.operation == "console.memories"]
    assert store.verify_audit() is None


def test_session_list_reads_clearance_as_a_label(world) -> None:
    _, s, path = world

    def listed(clearance: str) -> set[str]:
        out = CliRunner().invoke(
            cli, ["--db", str(path), "--json", "session", "list", "--all", "--clearance", clearance]
        )
        assert out.exit_code == 0, out.output
        return {x["id"] for x in json.loads(out.output)["sessions"]}

    plain, hr = listed("RESTRICTED"), listed("RESTRICTED+HR")
    assert s["plain"].id in plain and s["hr"].id not in plain and s["finance"].id not in plain
    assert {s["hr"].id, s["cover"].id, s["plain"].id} <= hr and s["finance"].id not in hr


def test_turn_export_and_import_keep_labels(world, tmp_path) -> None:
    """Exported transcript and usage lines name their compartments; an import encodes them through the
    importing store (other bits there) and refuses, whole, a compartment it does not define."""
    from stratamem.turn.transfer import parse_turn_record

    store, s, _ = world
    Transcript(s["hr"]).append(Message("user", "the salary case"))
    CostLedger(s["hr"]).record("model-x", 10, 5)
    lines = [r.to_dict() for r in store.export_turns()]
    assert {tuple(line.get("compartments", ())) for line in lines} == {("HR",)}
    records = [parse_turn_record(json.loads(json.dumps(line))) for line in lines]

    other = sm.open_store(str(tmp_path / "other.db"))
    other.define_compartments("LEGAL", "HR")  # HR on another bit than the source's
    assert other.import_turns(records) == 2
    (message,) = [r for r in other.export_turns() if r.to_dict()["record"] == "message"]
    assert message.compartments == {"HR"} and message.label_code == int(Level.CONFIDENTIAL) | (1 << 3)
    bare = sm.open_store(str(tmp_path / "bare.db"))
    with pytest.raises(sm.ValidationError, match="HR"):
        bare.import_turns(records)
    assert list(bare.export_turns()) == []
    other.close()
    bare.close()


def test_graph_export_and_import_at_a_label(world, tmp_path) -> None:
    """The operator's graph export reads as a session at a label sees; an import writes at a label, read
    only by sessions whose taint covers it."""
    store, s, _ = world
    s["hr"].graph.capture("Dana", "person", content="on leave")
    assert "Dana" not in "".join(store.export_graph("main", "CONFIDENTIAL"))
    lines = list(store.export_graph("main", "CONFIDENTIAL+HR"))
    assert any('"Dana"' in line for line in lines)

    other = sm.open_store(str(tmp_path / "other.db"))
    other.define_compartments("HR")
    assert other.import_graph(lines, "main", "INTERNAL+HR", scan=False)[0] >= 1
    plain = other.session("main", clearance="INTERNAL")
    plain.escalate("INTERNAL", "x")
    assert plain.graph.get("Dana") is None
    hr = other.session("main", clearance="INTERNAL+HR")
    hr.escalate("INTERNAL", "x")
    hr.enter("HR", "x")
    assert hr.graph.get("Dana") is not None
    with pytest.raises(sm.ValidationError):
        other.import_graph(lines, "main", "INTERNAL+NOPE")
    other.close()
