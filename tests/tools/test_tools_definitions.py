"""Tool definitions: envelopes per dialect, valid JSON Schema, read-only filtering."""

from __future__ import annotations

import json

import jsonschema
import pytest
from tools_support import new_store

import stratamem as sm
from stratamem.policy import Policy
from stratamem.tools import definitions, execute, names

DIALECTS = ("openai", "anthropic", "mcp")
PROFILES = {
    "triggerfish": [
        "memory_save",
        "memory_save_many",
        "memory_get",
        "memory_search",
        "memory_list",
        "memory_delete",
    ],
    "zeroclaw": [
        "memory_store",
        "memory_store_many",
        "memory_recall",
        "memory_forget",
        "memory_export",
        "memory_purge",
        "knowledge",
    ],
    "mcp-memory": [
        "create_entities",
        "create_relations",
        "add_observations",
        "delete_entities",
        "delete_observations",
        "delete_relations",
        "read_graph",
        "search_nodes",
        "open_nodes",
    ],
}
WRITERS = {
    "memory_save",
    "memory_save_many",
    "memory_store_many",
    "memory_delete",
    "memory_store",
    "memory_forget",
    "memory_purge",
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
}
DELETERS = (
    "memory_forget",
    "memory_purge",
    "memory_delete",
    "delete_entities",
    "delete_observations",
    "delete_relations",
)


def unwrap(dialect: str, definition: dict) -> tuple[str, str, dict]:
    if dialect == "openai":
        assert set(definition) == {"type", "function"} and definition["type"] == "function"
        fn = definition["function"]
        assert set(fn) == {"name", "description", "parameters"}
        return fn["name"], fn["description"], fn["parameters"]
    schema_key = "input_schema" if dialect == "anthropic" else "inputSchema"
    assert set(definition) == {"name", "description", schema_key}
    return definition["name"], definition["description"], definition[schema_key]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_definitions_are_valid_json_schema(dialect, profile):
    defs = definitions(dialect, profile)
    json.dumps(defs)  # serialisable as is
    seen = []
    for definition in defs:
        name, description, schema = unwrap(dialect, definition)
        seen.append(name)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert set(schema["required"]) <= set(schema["properties"])
        assert all(p.get("description") for p in schema["properties"].values())
        assert "Returns" in description
        if name in WRITERS and name not in DELETERS:
            assert "set automatically" in description
        assert "classification" not in schema["properties"] and "agent_id" not in schema["properties"]
    assert seen == PROFILES[profile]


def test_default_is_openai_triggerfish():
    assert definitions() == definitions("openai", "triggerfish")
    assert names() == PROFILES["triggerfish"]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("profile", PROFILES)
def test_read_only_hides_writing_tools(dialect, profile):
    read_only = [unwrap(dialect, d)[0] for d in definitions(dialect, profile, read_only=True)]
    assert read_only == [n for n in PROFILES[profile] if n not in WRITERS]
    via_policy = [unwrap(dialect, d)[0] for d in definitions(dialect, profile, policy=Policy(read_only=True))]
    assert via_policy == read_only


@pytest.mark.parametrize("bad", [{"dialect": "gemini"}, {"profile": "openclaw"}, {"dialect": None}])
def test_unknown_dialect_or_profile(bad):
    with pytest.raises(sm.ValidationError):
        definitions(**bad)


EXAMPLES = {
    "memory_save": {"key": "k", "content": "c", "tags": ["t"]},
    "memory_get": {"key": "k"},
    "memory_search": {"query": "c", "max_results": 3},
    "memory_list": {"tag": "t"},
    "memory_delete": {"key": "k"},
    "memory_store": {"key": "k2", "content": "c", "category": "daily"},
    "memory_recall": {
        "query": "c",
        "limit": 2,
        "since": "2020-01-01T00:00:00Z",
        "until": "2099-01-01T00:00:00Z",
    },
    "memory_export": {"category": "daily", "session_id": "s", "since": "2020-01-01T00:00:00+00:00"},
    "memory_forget": {"key": "k2"},
    "memory_purge": {"session_id": "s"},
}


def test_arguments_valid_by_the_schema_are_accepted_by_the_executor():
    schemas = {}
    for profile in PROFILES:
        for d in definitions("mcp", profile):
            schemas[d["name"]] = d["inputSchema"]
    with new_store() as store:
        s = store.session()
        for name, arguments in EXAMPLES.items():
            jsonschema.validate(arguments, schemas[name], cls=jsonschema.Draft202012Validator)
            text = execute(s, name, arguments)
            assert '"error"' not in text, (name, text)
