"""Issue 12's "Bad input" list, line by line, through the surfaces a user reaches: tools and import.

Every case ends in a clear error with a stable code and nothing half-written (the graph is unchanged).
"""

from __future__ import annotations

import json

import pytest

from stratamem import Level, ValidationError
from stratamem.graph.checks import MAX_OBSERVATIONS_PER_CALL
from stratamem.tools import execute

UNICODE_NAMES = [
    "名前",
    "👩‍💻 dev",
    "עברית",
    "é",
    "e\u0301",
    "<script>alert(1)</script>",
    "Ω≈ç√",
    "\u202eevil",
    "Ⅻ",
    "ｆｕｌｌ",
    "\U0001f600" * 60,
]


def call(session, tool: str, **arguments) -> object:
    return json.loads(execute(session, tool, arguments))


def entity(name: str, *observations: str) -> dict:
    return {"name": name, "entityType": "thing", "observations": list(observations)}


def test_any_unicode_name_round_trips_through_the_tools_byte_for_byte(store):
    s = store.session("a")
    made = call(s, "create_entities", entities=[entity(n, f"about {n}") for n in UNICODE_NAMES])
    assert [e["name"] for e in made] == UNICODE_NAMES
    opened = call(s, "open_nodes", names=UNICODE_NAMES)
    assert sorted(e["name"] for e in opened["entities"]) == sorted(UNICODE_NAMES)
    rel = [{"from": UNICODE_NAMES[0], "to": UNICODE_NAMES[1], "relationType": "関係"}]
    assert call(s, "create_relations", relations=rel) == rel
    assert s.graph.get("e\u0301").name == "e\u0301" and s.graph.get("é").name == "é"
    for bad in ("\ud800", "a\x00b", "tab\there", "x" * 257):
        answer = call(s, "create_entities", entities=[entity("fine"), entity(bad)])
        assert answer["error"]["code"] == "VALIDATION_ERROR", bad
    assert s.graph.get("fine") is None and s.graph.stats().nodes == len(UNICODE_NAMES)


def test_huge_observation_lists_are_refused_whole(store):
    s = store.session("a")
    too_many = [f"o{i}" for i in range(MAX_OBSERVATIONS_PER_CALL + 1)]
    answer = call(s, "create_entities", entities=[entity("A", *too_many)])
    assert answer["error"]["code"] == "VALIDATION_ERROR"
    call(s, "create_entities", entities=[entity("A")])
    answer = call(s, "add_observations", observations=[{"entityName": "A", "contents": too_many}])
    assert answer["error"]["code"] == "VALIDATION_ERROR"
    answer = call(s, "add_observations", observations=[{"entityName": "A", "contents": ["z" * 5000]}])
    assert answer["error"]["code"] == "VALIDATION_ERROR"
    assert s.graph.get("A").observations == () and s.graph.stats().observations == 0


def test_cycles_end_the_walk_through_the_tools(store):
    s = store.session("a")
    call(s, "create_entities", entities=[entity(n) for n in "ABCD"])
    ring = [{"from": a, "to": b, "relationType": "next"} for a, b in zip("ABCD", "BCDA", strict=True)]
    call(s, "create_relations", relations=[*ring, {"from": "A", "to": "A", "relationType": "self"}])
    answer = execute(s, "knowledge", {"action": "neighbors", "name": "A", "depth": 3})
    assert answer.startswith("Found 3 neighbors of A:")
    assert sorted(n.node.name for n in s.graph.neighbors("A", depth=3)) == ["B", "C", "D"]


MALFORMED = [
    "[1, 2]",
    '"just a string"',
    "{not json",
    "[" * 100_000 + "]" * 100_000,
    json.dumps({"type": "entity", "name": "x", "entityType": "t", "observations": "not a list"}),
    json.dumps({"type": "entity", "name": "x", "entityType": "t", "observations": [1]}),
    json.dumps({"type": "entity", "name": "\ud800", "entityType": "t"}),
    json.dumps({"type": "entity", "name": "a\u0000b", "entityType": "t"}),
    json.dumps({"type": "entity", "entityType": "t"}),
    json.dumps({"type": "relation", "from": "x"}),
    json.dumps({"type": "relation", "from": "x", "to": "y", "relationType": ["r"]}),
    json.dumps({"type": 7}),
]


@pytest.mark.parametrize("line", MALFORMED, ids=range(len(MALFORMED)))
def test_a_malformed_import_line_is_named_and_nothing_is_imported(store, line):
    good = json.dumps({"type": "entity", "name": "Good", "entityType": "t", "observations": ["fine"]})
    with pytest.raises(ValidationError) as info:
        store.import_graph([good, line, good], agent_id="a", level="internal")
    assert "line 2" in info.value.message and "nothing imported" in info.value.message
    s = store.session("a")
    s.escalate(Level.INTERNAL, "test")
    assert s.graph.stats().nodes == 0


def test_an_import_file_that_is_not_utf8_is_refused(store, tmp_path):
    path = tmp_path / "memory.jsonl"
    path.write_bytes(b'{"type": "entity", "name": "\xff\xfe", "entityType": "t"}\n')
    with pytest.raises(ValidationError) as info:
        store.import_graph(path, agent_id="a")
    assert "UTF-8" in info.value.message
    assert store.session("a").graph.stats().nodes == 0
