"""The graph's tools: zeroclaw ``knowledge`` and the ``mcp-memory`` profile, through tools.execute and policy."""

from __future__ import annotations

import json

import pytest
from tools_support import new_store

import stratamem as sm
from stratamem.policy import Policy
from stratamem.tools import definitions, execute
from stratamem.tools.mcp_memory import structured


@pytest.fixture
def session():
    store = new_store()
    yield store.session("a")
    store.close()


def run(session, name, **arguments):
    return execute(session, name, arguments)


def test_mcp_memory_answers_like_the_official_server(session):
    created = run(
        session,
        "create_entities",
        entities=[
            {"name": "Sam", "entityType": "person", "observations": ["likes tea"]},
            {"name": "Billing", "entityType": "team", "observations": []},
        ],
    )
    assert json.loads(created) == [
        {"name": "Sam", "entityType": "person", "observations": ["likes tea"]},
        {"name": "Billing", "entityType": "team", "observations": []},
    ]
    assert created.startswith('[{"name": "Sam"')
    assert structured("create_entities", created) == {"entities": json.loads(created)}
    assert (
        json.loads(
            run(
                session,
                "create_entities",
                entities=[{"name": "Sam", "entityType": "robot", "observations": []}],
            )
        )
        == []
    )  # existing names are skipped
    rel = {"from": "Sam", "to": "Billing", "relationType": "manages"}
    assert json.loads(run(session, "create_relations", relations=[rel, rel])) == [rel]
    assert json.loads(run(session, "create_relations", relations=[rel])) == []
    added = run(
        session, "add_observations", observations=[{"entityName": "Sam", "contents": ["likes tea", "chess"]}]
    )
    assert json.loads(added) == [{"entityName": "Sam", "addedObservations": ["chess"]}]
    assert structured("add_observations", added) == {"results": json.loads(added)}
    graph = {
        "entities": [
            {"name": "Billing", "entityType": "team", "observations": []},
            {"name": "Sam", "entityType": "person", "observations": ["likes tea", "chess"]},
        ],
        "relations": [rel],
    }
    assert json.loads(run(session, "read_graph")) == graph
    assert json.loads(run(session, "search_nodes", query="chess")) == {
        "entities": graph["entities"][1:],
        "relations": [rel],
    }
    assert json.loads(run(session, "open_nodes", names=["Billing", "Nobody"])) == {
        "entities": graph["entities"][:1],
        "relations": [rel],
    }
    missing = json.loads(
        run(session, "add_observations", observations=[{"entityName": "Nobody", "contents": ["x"]}])
    )
    assert missing["error"]["code"] == "NOT_FOUND"
    for name, args, text in [
        (
            "delete_observations",
            {"deletions": [{"entityName": "Sam", "observations": ["chess"]}]},
            "Observations deleted successfully",
        ),
        ("delete_relations", {"relations": [rel]}, "Relations deleted successfully"),
        ("delete_entities", {"entityNames": ["Sam", "Nobody"]}, "Entities deleted successfully"),
    ]:
        assert run(session, name, **args) == text
        assert structured(name, text) == {"success": True, "message": text}
    assert json.loads(run(session, "read_graph")) == {"entities": graph["entities"][:1], "relations": []}


def test_read_graph_is_paged_with_a_marker(session):
    entities = [{"name": f"n{i:03}", "entityType": "x", "observations": []} for i in range(250)]
    run(session, "create_entities", entities=entities)
    seen, cursor, pages = [], None, 0
    while True:
        page = json.loads(run(session, "read_graph", **({"cursor": cursor} if cursor else {})))
        pages += 1
        seen += [e["name"] for e in page["entities"]]
        assert len(page["entities"]) <= 100
        if not page.get("truncated"):
            assert "next_cursor" not in page
            break
        cursor = page["next_cursor"]
    assert pages == 3 and seen == [e["name"] for e in entities]
    opened = json.loads(run(session, "open_nodes", names=[e["name"] for e in entities]))
    assert len(opened["entities"]) == 100 and opened["truncated"] is True


def test_the_level_is_forced_and_agent_arguments_ignored(session):
    session.escalate("INTERNAL", "test")
    run(
        session,
        "create_entities",
        classification="PUBLIC",
        agent_id="b",
        entities=[{"name": "Plan", "entityType": "doc", "observations": ["secret-ish"]}],
    )
    node = session.graph.get("Plan")
    assert node.level == sm.Level.INTERNAL and node.agent_id == "a"
    public = session.store.session("a")
    assert json.loads(execute(public, "open_nodes", {"names": ["Plan"]})) == {"entities": [], "relations": []}


def test_graph_writes_pass_the_scanner_and_read_only(session):
    poisoned = "AWS key AKIAIOSFODNN7EXAMPLE secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    for name, args in [
        ("create_entities", {"entities": [{"name": "x", "entityType": "t", "observations": [poisoned]}]}),
        ("add_observations", {"observations": [{"entityName": "x", "contents": [poisoned]}]}),
        ("knowledge", {"action": "capture", "name": "x", "content": poisoned}),
    ]:
        answer = json.loads(execute(session, name, args))
        assert answer["error"]["code"] == "POLICY_BLOCKED", (name, answer)
    assert session.graph.stats().nodes == 0
    read_only = Policy(read_only=True)
    refused = json.loads(execute(session, "knowledge", {"action": "capture", "name": "y"}, policy=read_only))
    assert refused["error"]["code"] == "POLICY_BLOCKED"
    assert execute(session, "knowledge", {"action": "stats"}, policy=read_only).startswith(
        "Knowledge graph: 0 nodes"
    )
    assert [d["name"] for d in definitions("mcp", "mcp-memory", read_only=True)] == [
        "read_graph",
        "search_nodes",
        "open_nodes",
    ]
    assert "knowledge" in [d["name"] for d in definitions("mcp", "zeroclaw", read_only=True)]


def test_knowledge_actions_answer_in_plain_text(session):
    k = lambda **a: execute(session, "knowledge", a)  # noqa: E731
    assert (
        k(action="capture", name="Sam", type="person", content="runs billing")
        == "Captured node: Sam [person]"
    )
    assert k(action="capture", name="Billing", type="team") == "Captured node: Billing [team]"
    assert (
        k(action="capture", name="Payroll", type="team", content="billing audit")
        == "Captured node: Payroll [team]"
    )
    assert (
        k(action="relate", **{"from": "Sam", "to": "Billing"}, relation="manages")
        == "Related: Sam --manages--> Billing"
    )
    assert (
        k(action="relate", **{"from": "Sam", "to": "Billing"}, relation="manages")
        == "Already related: Sam --manages--> Billing"
    )
    assert (
        k(action="relate", **{"from": "Sam", "to": "Ghost"}, relation="x") == "No node found with name: Ghost"
    )
    assert (
        k(action="neighbors", name="Billing", depth=9, limit=0)
        == "Found 1 neighbors of Billing:\n- [person] Sam (distance 1, Sam --manages--> Billing)"
    )
    assert k(action="neighbors", name="Payroll") == "No neighbors found for: Payroll"
    assert k(action="neighbors", name="Ghost") == "No node found with name: Ghost"
    found = k(action="search", query="billing", limit=500)
    assert found.startswith("Found 3 nodes:\n- [") and "[100%]" in found.splitlines()[1]
    assert k(action="search", query="zzz") == "No nodes found."
    assert k(action="stats") == (
        "Knowledge graph: 3 nodes, 1 relations, 0 observations\n"
        "Node types: team (2), person (1)\nRelation types: manages (1)"
    )
    assert k(action="suggest", name="Sam").startswith("Found ")
    assert k(action="suggest", name="Ghost") == "No node found with name: Ghost"
    bad = json.loads(k(action="explode"))
    assert bad["error"]["code"] == "VALIDATION_ERROR"
    missing = json.loads(k(action="capture"))
    assert missing["error"]["code"] == "VALIDATION_ERROR"


def test_mcp_memory_bad_input_is_refused_whole(session):
    for args in [
        {"entities": "nope"},
        {"entities": [1]},
        {"entities": [{"name": "a"}]},
        {
            "entities": [
                {"name": "ok", "entityType": "t", "observations": []},
                {"name": "", "entityType": "t", "observations": []},
            ]
        },
        {"entities": [{"name": "\ud800", "entityType": "t", "observations": []}]},
    ]:
        answer = json.loads(execute(session, "create_entities", args))
        assert answer["error"]["code"] == "VALIDATION_ERROR", args
    assert session.graph.stats().nodes == 0
    run(session, "create_entities", entities=[{"name": "a", "entityType": "t", "observations": []}])
    answer = json.loads(
        run(
            session,
            "create_relations",
            relations=[
                {"from": "a", "to": "a", "relationType": "self"},
                {"from": "a", "to": "zz", "relationType": "r"},
            ],
        )
    )
    assert answer["error"]["code"] == "NOT_FOUND"
    assert session.graph.stats().edges == 0  # the self-loop before it was rolled back too
