"""One strict JSON reader for every body: REST, the turn API, the console, MCP (HTTP and stdio), every import.

The same hostile text is refused the same way everywhere: VALIDATION_ERROR, and the reader's message
(``not valid JSON at line L column C: <reason>``) verbatim, prefixed only by where the text came from.
Before, REST kept the last of two values for a repeated key and read ``NaN``; MCP's SDK did the same;
imports took ``tags`` as an object (its keys became tags).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from server_support import auth, write_config
from starlette.testclient import TestClient

import stratamem as sm
from stratamem.cli import cli
from stratamem.server.app import build_app
from stratamem.server.config import load_config
from stratamem.server.principals import Principals
from stratamem.server.state import ServerState
from stratamem.strict_json import MAX_DEPTH, DuplicateKey, JsonRefused, read_json

# (id, body, the reader's message for it)
HOSTILE = [
    (
        "duplicate-key",
        b'{"key": "k", "key": "x", "content": "c"}',
        "not valid JSON at line 1 column 14: duplicate key 'key'",
    ),
    (
        "nested-duplicate-key",
        b'{"key": "k", "content": "c", "x": [{"a": 1, "a": 2}]}',
        "not valid JSON at line 1 column 45: duplicate key 'a'",
    ),
    (
        "nan",
        b'{"key": "k", "content": "c", "x": NaN}',
        "not valid JSON at line 1 column 35: NaN and infinite numbers are not JSON",
    ),
    (
        "infinity",
        b'{"key": "k", "content": "c",\n "x": [1, -Infinity]}',
        "not valid JSON at line 2 column 11: NaN and infinite numbers are not JSON",
    ),
    (
        "overflow",
        b'{"key": "k", "content": "c", "x": 1e999}',
        "not valid JSON at line 1 column 35: NaN and infinite numbers are not JSON",
    ),
    (
        "lone-surrogate",
        b'{"key": "k", "content": "\\ud800"}',
        "not valid JSON at line 1 column 25: a lone surrogate cannot be stored as UTF-8",
    ),
    (
        "too-deep",
        b'{"key": "k", "content": "c", "x": ' + b"[" * 100 + b"]" * 100 + b"}",
        f"not valid JSON at line 1 column {35 + MAX_DEPTH - 1}: nested deeper than {MAX_DEPTH} levels",
    ),
    (
        "far-too-deep",
        b'{"key": "k", "content": "c", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        f"not valid JSON at line 1 column {35 + MAX_DEPTH - 1}: nested deeper than {MAX_DEPTH} levels",
    ),
]
IDS = [case[0] for case in HOSTILE]


@pytest.mark.parametrize(("name", "body", "message"), HOSTILE, ids=IDS)
def test_the_reader_refuses_with_the_position(name, body, message):
    with pytest.raises(JsonRefused) as refused:
        read_json(body)
    assert refused.value.message == message
    assert refused.value.code == "VALIDATION_ERROR"
    with pytest.raises(JsonRefused) as as_text:  # text handed over as str: the same refusal
        read_json(body.decode("utf-8"))
    assert as_text.value.message == message


def test_the_reader_refuses_invalid_utf8_and_reads_a_bom_and_surrogate_pairs():
    with pytest.raises(JsonRefused, match=r"at line 2 column 11: not valid UTF-8 \(byte 19\)"):
        read_json(b'{"a": 1,\n "b": "caf\xe9"}')
    with pytest.raises(JsonRefused, match="at line 1 column 9: not valid UTF-8"):  # surrogateescape'd byte
        read_json('{"a": "x\udcff"}')
    assert read_json(b'\xef\xbb\xbf{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}
    assert read_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None  # exactly the bound reads


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(value=_json, bad=st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-2E999"]))
def test_a_non_finite_number_anywhere_is_refused_where_it_stands(value, bad):
    text = json.dumps(value)
    assert read_json(text) == value
    placed = json.dumps([value, {"n": "marker"}]).replace('"marker"', bad)
    with pytest.raises(JsonRefused, match="NaN and infinite numbers are not JSON") as refused:
        read_json(placed)
    assert refused.value.colno == placed.rindex(bad) + 1


@settings(max_examples=100, deadline=None)
@given(value=_json, key=st.text(max_size=6))
def test_a_repeated_key_anywhere_is_refused(value, key):
    text = json.dumps([value, {key: value}])[:-2] + ", " + json.dumps(key) + ": 1}]"
    with pytest.raises(DuplicateKey) as refused:
        read_json(text)
    assert refused.value.key == key


# --- every REST body endpoint ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    directory = tmp_path_factory.mktemp("strict")
    config = load_config(write_config(directory))
    store = sm.open_store(str(directory / "memory.db"))
    state = ServerState(
        store, Principals(config.principals), profile=config.profile, policy=config.policy.build()
    )
    with TestClient(build_app(state), raise_server_exceptions=False, headers=auth("alice")) as client:
        yield client, store
    store.close()


def _endpoints(client: TestClient) -> list[tuple[str, str, dict[str, str]]]:
    session = client.post("/v1/sessions").json()["id"]
    s = f"/v1/sessions/{session}"
    turn = client.post(f"{s}/turns", json={"user_message": "hello"})
    assert turn.status_code in (200, 201), turn.text
    t = f"{s}/turns/{turn.json()['turn_id']}"
    console = client.post("/v1/console/open", json={"clearance": "RESTRICTED"}, headers=auth("ops"))
    assert console.status_code == 201, console.text
    ops = {**auth("ops"), "X-Stratamem-Console": console.json()["console"]}
    alice = auth("alice")
    return [
        ("POST", "/v1/sessions", alice),
        ("POST", f"{s}/escalate", alice),
        ("POST", f"{s}/memories", alice),
        ("POST", f"{s}/memories:batch", alice),
        ("PUT", f"{s}/memories/k", alice),
        ("POST", f"{s}/search", alice),
        ("POST", f"{s}/graph/create_entities", alice),
        ("POST", f"{s}/turns", alice),
        ("POST", f"{t}/tool-calls", alice),
        ("POST", f"{t}/tool-results", alice),
        ("POST", f"{t}/usage", alice),
        ("POST", f"{t}/end", alice),
        ("POST", "/v1/console/open", auth("ops")),
        ("POST", "/v1/console/agents/alice/search", ops),
        ("POST", "/v1/console/records/1/delete", ops),
        ("POST", "/v1/console/records/1/restore", ops),
        ("POST", "/v1/console/purge", ops),
    ]


def test_every_rest_body_endpoint_refuses_the_same_way(app):
    client, store = app
    endpoints = _endpoints(client)
    for _, body, message in HOSTILE:
        for method, path, headers in endpoints:
            answer = client.request(method, path, content=body, headers=headers)
            if answer.status_code == 413:  # the console's bodies are bounded at 64 KiB, before reading
                assert path.startswith("/v1/console") and len(body) > 64 * 1024
                continue
            assert answer.status_code == 400, (path, body[:60], answer.text)
            assert answer.json() == {
                "error": {"code": "VALIDATION_ERROR", "message": f"request body: {message}"}
            }, path
    session = store.session("alice")
    session.escalate(sm.Level.CONFIDENTIAL, "check")
    assert session.list() == []


def test_tags_must_be_a_list_of_strings_in_a_batch_item_too(app):
    client, _ = app
    s = f"/v1/sessions/{client.post('/v1/sessions').json()['id']}"
    for tags in ({"a": 1}, "a", 1, True):
        single = client.post(f"{s}/memories", json={"key": "k", "content": "c", "tags": tags})
        batch = client.post(
            f"{s}/memories:batch", json={"items": [{"key": "k", "content": "c", "tags": tags}]}
        )
        for answer in (single, batch):
            assert answer.status_code == 400, answer.text
            assert "tags must be a list of strings" in answer.json()["error"]["message"]


# --- MCP over HTTP and stdio ------------------------------------------------------------------------------

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _tool_call(arguments: bytes, ident: int = 7) -> bytes:
    head = b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "memory_save", "arguments": '
    return head % ident + arguments + b"}}"


def _shifted(message: str, columns: int) -> str:
    """The reader's message for a body that now starts ``columns`` characters further right."""
    head, _, rest = message.partition(" column ")
    number, _, reason = rest.partition(": ")
    line = head.rsplit(" ", 1)[1]
    return f"{head} column {int(number) + columns if line == '1' else number}: {reason}"


@pytest.mark.parametrize(("name", "body", "message"), HOSTILE, ids=IDS)
def test_mcp_over_http_refuses_before_the_sdk_reads(app, name, body, message):
    client, _ = app
    # the arguments start further right, and two objects deeper (the message and its params)
    shift = len(_tool_call(b"")) - 2 - (2 if "deep" in name else 0)
    for path in ("/mcp", "/mcp-turns"):
        answer = client.post(path, content=_tool_call(body), headers={**auth("alice"), **MCP_HEADERS})
        assert answer.status_code == 400, answer.text
        expected = f"request body: {_shifted(message, shift)}"
        assert answer.json() == {
            "jsonrpc": "2.0",
            "id": None if name == "far-too-deep" else 7,  # the id is taken from a lenient reading
            "error": {
                "code": -32700,
                "message": expected,
                "data": {"error": {"code": "VALIDATION_ERROR", "message": expected}},
            },
        }


def test_mcp_over_stdio_answers_a_refused_message_and_keeps_serving(tmp_path):
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    lines = [
        json.dumps(init).encode(),
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        _tool_call(HOSTILE[0][1]),
        _tool_call(b'{"key": "k", "content": "caf\xe9"}', 8),
        b'{"jsonrpc": "2.0", "id": 9, "method": "tools/list"}',
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "stratamem", "--db", str(tmp_path / "m.db"), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PYTHONPATH": str(Path(sm.__file__).parents[1]), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"\n".join(lines) + b"\n")
    process.stdin.flush()
    # stdin stays open until the last answer is read: at end of input a server may drop calls still in flight
    answers: dict[object, dict] = {}
    deadline = threading.Timer(120, process.kill)  # a hung server ends the read loop instead of the test run
    deadline.start()
    while 9 not in answers:
        line = process.stdout.readline()
        if not line:
            break
        answer = json.loads(line)
        answers[answer.get("id")] = answer
    deadline.cancel()
    process.stdin.close()
    process.wait(timeout=120)
    shift = len(_tool_call(b"")) - 2
    for ident, message in (
        (7, _shifted(HOSTILE[0][2], shift)),
        (8, "column 128: not valid UTF-8 (byte 127)"),
    ):
        error = answers[ident]["error"]
        assert error["code"] == -32700 and error["data"]["error"]["code"] == "VALIDATION_ERROR"
        assert error["message"].startswith("message: not valid JSON at line 1 column")
        assert error["message"].endswith(message)
    assert len(answers[9]["result"]["tools"]) > 0, process.stderr.read().decode() if process.stderr else ""
    with sm.open_store(str(tmp_path / "m.db")) as store:
        session = store.session("main")
        session.escalate(sm.Level.RESTRICTED, "check")
        assert session.list() == []


# --- every import format --------------------------------------------------------------------------------


def _import(tmp_path: Path, text: bytes, fmt: str) -> str:
    path = tmp_path / {"jsonl": "e.jsonl", "mcp-memory": "memory.jsonl", "mem0": "mem0.json"}[fmt]
    path.write_bytes(text)
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "i.db"), "import", str(path), "--format", fmt, "--level", "PUBLIC"]
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.mark.parametrize(("name", "body", "message"), HOSTILE, ids=IDS)
@pytest.mark.parametrize("fmt", ["jsonl", "mcp-memory", "mem0"])
def test_every_import_format_refuses_the_same_way(tmp_path, fmt, name, body, message):
    if fmt != "mem0" and b"\n" in body:  # a JSON Lines record is one line
        body, message = body.replace(b"\n", b""), message.replace("line 2 column 11", "line 1 column 39")
    output = _import(tmp_path, body + b"\n", fmt)
    assert message in output, output


def test_tags_as_an_object_are_refused_by_every_import(tmp_path):
    line = {"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "main", "tags": {"a": 1}}
    assert "tags must be a list of strings" in _import(tmp_path, json.dumps(line).encode(), "jsonl")
    record = [{"id": "a", "memory": "x", "categories": {"a": 1}}]
    assert "tags must be a list of strings" in _import(tmp_path, json.dumps(record).encode(), "mem0")
    record = [{"id": "a", "memory": "x", "categories": [1]}]
    assert "tags must be a list of strings" in _import(tmp_path, json.dumps(record).encode(), "mem0")


def test_operator_json_is_read_strictly_too(tmp_path):
    """A rules file or a price table naming a key twice kept the last value: a rule or a price lost."""
    from stratamem.policy.loader import load_rules
    from stratamem.server.config import ServerConfig

    rules = tmp_path / "rules.json"
    rules.write_text(
        '[{"name": "a", "hook": "PRE_TOOL_CALL", "hook": "POST_TOOL_RESPONSE"}]', encoding="utf-8"
    )
    with pytest.raises(sm.ValidationError, match="not valid JSON at line 1 column 41: duplicate key 'hook'"):
        load_rules(rules)
    prices = (
        '{"m": {"input_per_mtok": 1, "output_per_mtok": 2}, "m": {"input_per_mtok": 0, "output_per_mtok": 0}}'
    )
    with pytest.raises(sm.ValidationError, match="STRATAMEM_PRICES: not valid JSON at line 1 column 52"):
        ServerConfig().turn_config({"STRATAMEM_PRICES": prices})
