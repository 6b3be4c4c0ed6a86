"""Set-based graph writes (``storage/graph_batch``) keep every rule of the row-by-row path, on every backend.

A batch of entities or relations is read and written in a few statements; these tests pin what that must
not change: names repeated in one call, names the session already sees, names that exist only above it,
the observation limit, NOT_FOUND for missing and invisible endpoints alike, all-or-nothing calls.
"""

from __future__ import annotations

import json

import pytest

import stratamem as sm
from stratamem import Level, NotFound, ValidationError
from stratamem.graph.checks import MAX_OBSERVATIONS_PER_NODE
from stratamem.tools import execute
from stratamem.turn import EventLog, ToolCall


def entity(name: str, *observations: str, type_: str = "thing") -> dict:
    return {"name": name, "entityType": type_, "observations": list(observations)}


def call(session, tool: str, **arguments) -> object:
    return json.loads(execute(session, tool, arguments))


def test_a_batch_creates_new_names_once_and_skips_the_ones_seen(store):
    s = store.session("a")
    assert call(s, "create_entities", entities=[entity("A", "one")]) == [entity("A", "one")]
    made = call(
        s,
        "create_entities",
        entities=[entity("A", "other"), entity("B", "b1", "b1", "b2"), entity("B", "late"), entity("C")],
    )
    assert made == [entity("B", "b1", "b2"), entity("C")]
    assert [o.text for o in s.graph.get("A").observations] == ["one"]
    assert [o.text for o in s.graph.get("B").observations] == ["b1", "b2"]
    assert s.graph.stats().nodes == 3 and s.graph.stats().observations == 3
    assert [h.node.name for h in s.graph.search("b2")] == ["B"]


def test_merge_in_one_batch_updates_the_node_just_created(store):
    s = store.session("a")
    drafts = [
        s.graph.draft("N", "t", "first", observations=["x"]),
        s.graph.draft("N", None, "second", observations=["y"]),
    ]
    (first, created1), (second, created2) = s.graph.write_nodes(drafts, merge=True)
    assert created1 and created2 and first.id == second.id
    assert second.content == "second" and [o.text for o in second.observations] == ["x", "y"]
    assert s.graph.stats().nodes == 1


def test_a_name_that_exists_only_above_the_session_gets_a_shadowed_version(store):
    high = store.session("a")
    high.escalate(Level.CONFIDENTIAL, "test")
    high.graph.capture("Proj", "project", "secret", observations=["confidential words"])
    low = store.session("a")
    assert call(low, "create_entities", entities=[entity("Proj", "public words")]) == [
        entity("Proj", "public words")
    ]
    assert low.graph.get("Proj").level == Level.PUBLIC and low.graph.stats().nodes == 1
    assert high.graph.get("Proj").content == "secret" and high.graph.stats().nodes == 1
    assert [h.node.level for h in high.graph.search("words")] == [Level.CONFIDENTIAL]
    assert [h.node.level for h in low.graph.search("words")] == [Level.PUBLIC]
    assert low.graph.search("confidential") == []


def test_a_node_recreated_over_older_observations_answers_them_all(store):
    low = store.session("a")
    low.graph.capture("N", "x")
    mid = store.session("a")
    mid.escalate(Level.INTERNAL, "test")
    mid.graph.add_observations([("N", ["kept at internal"])])
    assert low.graph.delete_nodes(["N"]) == ["N"]
    assert mid.graph.get("N") is None
    made = call(mid, "create_entities", entities=[entity("N", "new")])
    assert made == [entity("N", "kept at internal", "new")]
    assert mid.graph.stats().observations == 2
    assert [h.node.name for h in mid.graph.search("kept")] == ["N"]


def test_the_observation_limit_holds_across_calls_and_nothing_is_half_written(store):
    s = store.session("a")
    full = [f"fact {i}" for i in range(MAX_OBSERVATIONS_PER_NODE)]
    assert len(s.graph.capture("Full", "x", observations=full).observations) == MAX_OBSERVATIONS_PER_NODE
    with pytest.raises(ValidationError):
        s.graph.add_observations([("Full", ["one too many"])])
    answer = call(s, "create_entities", entities=[entity("Fine", "ok"), entity("Bad", "y" * 5000)])
    assert answer["error"]["code"] == "VALIDATION_ERROR"
    assert s.graph.get("Fine") is None and s.graph.stats().nodes == 1
    assert len(s.graph.get("Full").observations) == MAX_OBSERVATIONS_PER_NODE


def test_relations_in_a_batch_are_not_duplicated(store):
    s = store.session("a")
    call(s, "create_entities", entities=[entity("A"), entity("B")])
    rel = {"from": "A", "to": "B", "relationType": "knows"}
    loop = {"from": "A", "to": "A", "relationType": "self"}
    assert call(s, "create_relations", relations=[rel, rel, loop]) == [rel, loop]
    assert call(s, "create_relations", relations=[rel, loop]) == []
    assert s.graph.stats().edges == 2 and s.graph.degree("A") == (2, 1)
    (edge, created), (again, created2) = s.graph.relate_many(
        [sm.graph.EdgeDraft("B", "A", "r", "first"), sm.graph.EdgeDraft("B", "A", "r", "second")]
    )
    assert created and not created2 and again.id == edge.id and again.note == "second"
    assert [e.note for e in s.graph.open(["B"])[1] if e.relation == "r"] == ["second"]


def test_a_relation_to_a_missing_or_invisible_node_fails_the_whole_call_alike(store):
    high = store.session("a")
    high.escalate(Level.RESTRICTED, "test")
    high.graph.capture("Secret", "x")
    low = store.session("a")
    call(low, "create_entities", entities=[entity("A"), entity("B")])
    answers = []
    for target in ("Secret", "Ghost"):
        batch = [
            {"from": "A", "to": "B", "relationType": "ok"},
            {"from": "A", "to": target, "relationType": "r"},
        ]
        answer = call(low, "create_relations", relations=batch)
        answers.append(json.dumps(answer).replace(target, "?"))
        with pytest.raises(NotFound):
            low.graph.relate_many([sm.graph.EdgeDraft(target, "A", "r")])
    assert answers[0] == answers[1] and json.loads(answers[0])["error"]["code"] == "NOT_FOUND"
    assert low.graph.stats().edges == 0 and high.graph.stats().edges == 0


def test_tool_call_events_show_counts_not_graph_content(store):
    log = EventLog()
    store.events.subscribe(log)
    s = store.session("a")
    call(s, "create_entities", entities=[entity("Sam", "private observation text")])
    call(s, "search_nodes", query="private")
    (made, searched) = log.of_type(ToolCall)
    assert json.loads(made.arguments) == {"entities": 1}
    assert "private observation" not in repr(log.events) and "Sam" not in made.arguments
    assert json.loads(searched.arguments) == {"query": "private"}
