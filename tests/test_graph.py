"""The knowledge graph on every backend: model, levels, versions, deletes, purge, copy, audit, import."""

from __future__ import annotations

import json

import pytest
from conftest import FakeClock

import stratamem as sm
from stratamem import Level, NotFound, ValidationError
from stratamem.graph.checks import MAX_OBSERVATIONS_PER_CALL
from stratamem.migrate import migrate


def names(nodes):
    return [n.name for n in nodes]


def test_capture_open_relate_round_trip(store):
    s = store.session("a")
    sam = s.graph.capture(
        "Sam", "person", "runs the billing team", tags=["staff"], observations=["likes tea"], source="chat"
    )
    assert (sam.name, sam.type, sam.content, sam.tags, sam.level, sam.source) == (
        "Sam",
        "person",
        "runs the billing team",
        ("staff",),
        Level.PUBLIC,
        "chat",
    )
    assert [o.text for o in sam.observations] == ["likes tea"]
    assert sam.agent_id == "a" and sam.session_id == s.id and sam.created_at == sam.updated_at
    s.graph.capture("Billing", "team")
    edge = s.graph.relate("Sam", "Billing", "manages", note="since 2024")
    assert (edge.source, edge.target, edge.relation, edge.note, edge.level) == (
        "Sam",
        "Billing",
        "manages",
        "since 2024",
        Level.PUBLIC,
    )
    nodes, edges = s.graph.open(["Sam", "nobody"])
    assert names(nodes) == ["Sam"] and [(e.source, e.target) for e in edges] == [("Sam", "Billing")]
    again = s.graph.capture("Sam", observations=["likes tea", "plays chess"])
    assert again.type == "person" and again.content == "runs the billing team"
    assert [o.text for o in again.observations] == ["likes tea", "plays chess"]
    assert again.created_at == sam.created_at and again.updated_at > sam.updated_at


def test_writes_land_at_the_live_taint_and_versions_shadow(store):
    low = store.session("a")
    low.graph.capture("Proj", "project", "public plan")
    high = store.session("a")
    high.escalate(Level.CONFIDENTIAL, "test")
    assert high.graph.get("Proj").level == Level.PUBLIC
    v2 = high.graph.capture("Proj", content="secret plan")
    assert v2.level == Level.CONFIDENTIAL and v2.type == "project"
    assert low.graph.get("Proj").content == "public plan"
    assert high.graph.get("Proj").content == "secret plan"
    assert [n.content for n in high.graph.read().nodes] == ["secret plan"]
    assert high.graph.stats().nodes == 1
    assert high.graph.delete_nodes(["Proj"]) == ["Proj"]
    assert high.graph.get("Proj").content == "public plan"


def test_observations_and_edges_are_classified(store):
    low = store.session("a")
    low.graph.capture("A", "x")
    low.graph.capture("B", "x")
    high = store.session("a")
    high.escalate(Level.INTERNAL, "test")
    high.graph.add_observations([("A", ["internal detail"])])
    high.graph.relate("A", "B", "knows")
    high.graph.capture("C", "x")
    high.graph.relate("A", "C", "owns")
    assert [o.text for o in high.graph.get("A").observations] == ["internal detail"]
    assert low.graph.get("A").observations == ()
    assert low.graph.neighbors("A") == [] and low.graph.degree("A") == (0, 0)
    assert sorted(n.node.name for n in high.graph.neighbors("A")) == ["B", "C"]
    assert low.graph.stats() == sm.graph.GraphStats(2, 0, 0, (("x", 2),), ())
    assert low.graph.search("internal detail") == []


def test_missing_and_invisible_endpoints_are_the_same_not_found(store):
    low = store.session("a")
    low.graph.capture("A", "x")
    high = store.session("a")
    high.escalate(Level.RESTRICTED, "test")
    high.graph.capture("Secret", "x")
    errors = []
    for target in ("Secret", "Ghost"):
        with pytest.raises(NotFound) as info:
            low.graph.relate("A", target, "knows")
        errors.append(info.value.message.replace(target, "?"))
        with pytest.raises(NotFound) as info:
            low.graph.add_observations([(target, ["x"])])
        errors.append(info.value.message.replace(target, "?"))
        with pytest.raises(NotFound) as info:
            low.graph.neighbors(target)
        errors.append(info.value.message.replace(target, "?"))
    assert errors[:3] == errors[3:]


def test_peers_are_read_only_and_agents_do_not_mix(store):
    b = store.session("b")
    b.graph.capture("Shared", "doc", "peer content")
    store.session("c").graph.capture("Other", "doc")
    a = store.session("a", peers=("b",))
    assert a.graph.get("Shared").agent_id == "b"
    assert a.graph.get("Other") is None
    with pytest.raises(NotFound):
        a.graph.add_observations([("Shared", ["mine"])])
    with pytest.raises(NotFound):
        a.graph.relate("Shared", "Shared", "self")
    assert a.graph.delete_nodes(["Shared"]) == []
    assert b.graph.get("Shared") is not None


def test_deletes_are_soft_and_own_level_only(store):
    low = store.session("a")
    low.graph.capture("A", "x", observations=["one", "two"])
    low.graph.capture("B", "x")
    low.graph.relate("A", "B", "r")
    high = store.session("a")
    high.escalate(Level.INTERNAL, "test")
    assert high.graph.delete_nodes(["A"]) == []
    assert high.graph.delete_observations([("A", ["one"])]) == 0
    assert high.graph.delete_edges([sm.graph.EdgeDraft("A", "B", "r")]) == 0
    assert low.graph.delete_observations([("A", ["one"])]) == 1
    assert [o.text for o in low.graph.get("A").observations] == ["two"]
    assert low.graph.delete_edges([sm.graph.EdgeDraft("A", "B", "r")]) == 1
    assert low.graph.neighbors("A") == []
    low.graph.relate("A", "B", "r")
    assert low.graph.delete_nodes(["A"]) == ["A"]
    assert low.graph.get("A") is None and low.graph.neighbors("B") == []
    assert low.graph.stats().nodes == 1


def test_self_loops_duplicates_and_cycles(store):
    s = store.session("a")
    for name in "ABC":
        s.graph.capture(name, "x")
    loop = s.graph.relate("A", "A", "reviews")
    assert loop.source == loop.target == "A"
    first = s.graph.relate("A", "B", "r", note="n1")
    again = s.graph.relate("A", "B", "r", note="n2")
    assert again.id == first.id and again.note == "n2"
    s.graph.relate("B", "C", "r")
    s.graph.relate("C", "A", "r")
    reached = s.graph.neighbors("A", depth=3)
    assert sorted((n.node.name, n.distance) for n in reached) == [("B", 1), ("C", 1)]
    assert s.graph.degree("A") == (2, 2)
    assert s.graph.stats().edges == 4
    assert [e.relation for e in s.graph.path("A", "C")] == ["r"]


def test_bad_input_is_refused_whole(store):
    s = store.session("a")
    for bad in ("", "   ", "a\x00b", "line\nbreak", "x" * 300, "\ud800"):
        with pytest.raises(ValidationError):
            s.graph.capture(bad, "x")
    with pytest.raises(ValidationError):
        s.graph.capture("ok", "x", observations=["o"] * (MAX_OBSERVATIONS_PER_CALL + 1))
    with pytest.raises(ValidationError):
        s.graph.capture("ok", "x", observations=["y" * 5000])
    with pytest.raises(ValidationError):
        s.graph.capture("ok", "x", observations="not a list")
    assert s.graph.stats().nodes == 0
    for name in ("名前", "👩‍💻 dev", "עברית", "é", "e\u0301", "<script>alert(1)</script>", "Ω≈ç√"):
        assert s.graph.capture(name, "ünïcode").name == name
    assert s.graph.stats().nodes == 7
    assert s.graph.get("e\u0301").name == "e\u0301" and s.graph.get("é").name == "é"


def test_purge_erases_graph_rows(store):
    clock = store.clock
    s = store.session("a")
    s.graph.capture("Doomed", "x", "PURGE-ME-graph", observations=["PURGE-ME-obs"])
    s.graph.capture("Kept", "x")
    s.graph.relate("Doomed", "Kept", "r")
    s.graph.delete_nodes(["Doomed"])
    clock.advance(10)
    assert store.purge(before=clock()) == 3
    rows = [row for table, row in store.backend.dump() if table.startswith("graph_")]
    assert "PURGE-ME" not in json.dumps(rows)
    assert [r["name"] for r in rows] == ["Kept"]


def test_graph_bytes_leave_the_sqlite_file(tmp_path):
    from test_purge import db_bytes

    path = str(tmp_path / "g.db")
    clock = FakeClock()
    store = sm.open_store(path, clock=clock)
    s = store.session("a")
    s.graph.capture("Doomed", "x", "PURGE-ME-zz91 content", observations=["PURGE-ME-zz91 obs"])
    s.graph.delete_nodes(["Doomed"])
    clock.advance(10)
    store.purge(before=clock())
    store.close()
    assert b"PURGE-ME-zz91" not in db_bytes(path)


def test_audit_events_carry_no_graph_content(store):
    s = store.session("a")
    s.graph.capture("Sam", "person", "CONTENT-MARK", observations=["OBS-MARK"])
    s.graph.capture("B", "x")
    s.graph.relate("Sam", "B", "REL-MARK", note="NOTE-MARK")
    s.graph.search("CONTENT-MARK")
    s.graph.neighbors("Sam")
    events = store.audit_events()
    ops = {e.operation for e in events}
    assert {"graph.write", "graph.relate", "graph.search", "graph.neighbors"} <= ops
    text = json.dumps([[e.keys, e.detail] for e in events])
    for mark in ("CONTENT-MARK", "OBS-MARK", "REL-MARK", "NOTE-MARK"):
        assert mark not in text
    assert store.verify_audit() is None


def test_migrate_copies_the_graph(make_store, tmp_path):
    source_url = str(tmp_path / "src.db")
    src = sm.open_store(source_url, clock=FakeClock())
    s = src.session("a", session_id="s1")
    s.escalate(Level.INTERNAL, "test")
    s.graph.capture("A", "x", "alpha", observations=["o1"])
    s.graph.capture("B", "x")
    s.graph.relate("A", "B", "r")
    before = (s.graph.search("alpha"), s.graph.stats())
    src.close()
    target = make_store()
    target_url = target.url
    target.close()
    if target_url == ":memory:":
        pytest.skip("an in-memory store cannot be reopened")
    migrate(source_url, target_url)
    dst = sm.open_store(target_url, clock=FakeClock())
    try:
        t = dst.session("a", session_id="s1")
        after = (t.graph.search("alpha"), t.graph.stats())
        assert [(h.node.name, h.score) for h in after[0]] == [(h.node.name, h.score) for h in before[0]]
        assert after[1] == before[1]
    finally:
        dst.close()


def test_import_mcp_memory_file(store, tmp_path):
    good = tmp_path / "memory.jsonl"
    good.write_text(
        "\n".join(
            [
                json.dumps(
                    {"type": "entity", "name": "Sam", "entityType": "person", "observations": ["likes tea"]}
                ),
                json.dumps({"type": "entity", "name": "Billing", "entityType": "team", "observations": []}),
                json.dumps({"type": "relation", "from": "Sam", "to": "Billing", "relationType": "manages"}),
            ]
        ),
        encoding="utf-8",
    )
    assert store.import_graph(good, agent_id="a", level="internal") == (2, 1)
    s = store.session("a")
    assert s.graph.get("Sam") is None
    s.escalate(Level.INTERNAL, "test")
    assert s.graph.get("Sam").level == Level.INTERNAL
    assert [n.node.name for n in s.graph.neighbors("Sam")] == ["Billing"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join(
            [
                json.dumps({"type": "entity", "name": "New", "entityType": "x", "observations": []}),
                "{not json",
                json.dumps({"type": "entity", "name": "", "entityType": "x"}),
                json.dumps({"type": "mystery"}),
            ]
        ),
        encoding="utf-8",
    )
    with pytest.raises(ValidationError) as info:
        store.import_graph(bad, agent_id="a", level="internal")
    assert (
        "line 2" in info.value.message and "line 3" in info.value.message and "line 4" in info.value.message
    )
    dangling = tmp_path / "dangling.jsonl"
    dangling.write_text(
        json.dumps({"type": "entity", "name": "New", "entityType": "x", "observations": []})
        + "\n"
        + json.dumps({"type": "relation", "from": "New", "to": "Nope", "relationType": "r"})
    )
    with pytest.raises(ValidationError) as info:
        store.import_graph(dangling, agent_id="a", level="internal")
    assert "line 2" in info.value.message
    assert s.graph.get("New") is None and s.graph.stats().nodes == 2


def test_an_edge_vanishes_with_an_endpoint(store):
    low = store.session("a")
    low.graph.capture("A", "x")
    low.graph.capture("B", "x")
    high = store.session("a")
    high.escalate(Level.INTERNAL, "test")
    high.graph.relate("A", "B", "r")
    assert [n.node.name for n in high.graph.neighbors("B")] == ["A"]
    low.graph.delete_nodes(["A"])  # the INTERNAL edge stays stored, but one endpoint is gone
    assert high.graph.neighbors("B") == [] and high.graph.degree("B") == (0, 0)
    assert high.graph.stats().edges == 0 and high.graph.path("B", "B") == []
    high.graph.capture("A", "x")  # a new version of the endpoint brings the edge back into view
    assert [n.node.name for n in high.graph.neighbors("B")] == ["A"]


def test_cli_imports_an_mcp_memory_file(tmp_path):
    from click.testing import CliRunner

    from stratamem.cli import cli

    db, good, bad = tmp_path / "m.db", tmp_path / "memory.jsonl", tmp_path / "bad.jsonl"
    good.write_text(
        json.dumps({"type": "entity", "name": "Ann", "entityType": "person", "observations": ["hi"]}) + "\n",
        encoding="utf-8",
    )
    bad.write_text(
        json.dumps({"type": "entity", "name": "Bob", "entityType": "person", "observations": []})
        + "\n[1, 2]\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    done = runner.invoke(
        cli,
        [
            "--db",
            str(db),
            "--agent",
            "ops",
            "--json",
            "import",
            "--format",
            "mcp-memory",
            "--level",
            "confidential",
            str(good),
        ],
    )
    assert done.exit_code == 0 and json.loads(done.output) == {"imported": {"nodes": 1, "edges": 0}}
    refused = runner.invoke(cli, ["--db", str(db), "import", "--format", "mcp-memory", str(bad)])
    assert refused.exit_code == 2 and "line 2" in refused.output
    with sm.open_store(str(db)) as store:
        s = store.session("ops")
        s.escalate(Level.CONFIDENTIAL, "check")
        assert [n.name for n in s.graph.read().nodes] == ["Ann"]
        assert s.graph.get("Ann").level == Level.CONFIDENTIAL


def test_export_as_mcp_memory_round_trips(store, tmp_path):
    s = store.session("a")
    s.graph.capture("Sam", "person", observations=["likes tea"])
    s.graph.capture("Billing", "team")
    s.graph.relate("Sam", "Billing", "manages")
    high = store.session("a")
    high.escalate(Level.INTERNAL, "test")
    high.graph.capture("Hidden", "x")
    lines = list(store.export_graph("a", "PUBLIC"))
    assert [json.loads(line) for line in lines] == [
        {"type": "entity", "name": "Billing", "entityType": "team", "observations": []},
        {"type": "entity", "name": "Sam", "entityType": "person", "observations": ["likes tea"]},
        {"type": "relation", "from": "Sam", "to": "Billing", "relationType": "manages"},
    ]
    assert store.import_graph(lines, agent_id="copy", level="PUBLIC") == (2, 1)
    assert [n.node.name for n in store.session("copy").graph.neighbors("Sam")] == ["Billing"]
