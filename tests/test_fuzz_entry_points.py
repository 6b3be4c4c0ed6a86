"""Hostile input at every entry point: a clear error with a stable code, or success — never anything else.

Issue 9, item 11. Entry points: the Python API (Store and Session methods),
``tools.execute`` (every tool of both profiles), REST (Starlette's test
client on the real app), MCP (the server's tool handler, and a real client
over streamable HTTP), the CLI (click's runner, and a subprocess for argv that
is not valid UTF-8) and import (JSON Lines). "Never anything else" means: no
exception other than ``StratamemError`` with one of the public codes, no
STORAGE_ERROR for bad input, no HTTP 500/503, no exit 1 ("not found") or 3
for a validation error, and no traceback.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import BACKENDS, FakeClock, fresh_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratamem as sm
from stratamem import shapes
from stratamem.errors import StratamemError
from stratamem.tools import TOOLS, execute
from stratamem.transfer import read_lines

CLEAR_CODES = {"VALIDATION_ERROR", "NOT_FOUND", "POLICY_BLOCKED"}
FAST = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# -- hostile values ------------------------------------------------------------------------------------

SURROGATES = ["\ud800", "\udcff", "a\udfffb", "\ud83d", "key\udc80"]
NASTY_TEXT = [
    "",
    " ",
    "   ",
    "\t\n",
    "\x00",
    "a\x00b",
    "\x1b[31m",
    "\u200b",
    "\u202e",
    "\ufeff",
    "\uffff",
    "NaN",
    "null",
    "<script>alert(1)</script>",
    "../../etc/passwd",
    "%00",
    "*",
    "-",
    "😀" * 50,
    "x" * 257,
    "y" * 10_001,
    "z" * 70_000,
    "PUBLIC",
    "restricted",
    "c1.",
    "c1.WyJhIiwiYiJd",
]
HUGE_NUMBERS = [1e12, 1e308, -1e308, 2**63, -(2**63), 2**200, 10**400, 0, -1, -0.0, 0.5]
ODD_TIMES = [
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "9999-12-31T23:59:59.999999",
    "2026-13-01",
    "2026-02-30T00:00:00Z",
    "yesterday",
    "1e9",
    "0000-00-00",
]


def nested(depth: int, leaf: object = 1) -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


hostile_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(SURROGATES + NASTY_TEXT + ODD_TIMES),
    st.lists(st.sampled_from([*SURROGATES, "a", " "]), min_size=1, max_size=4).map("".join),
)
hostile_scalar = st.one_of(
    hostile_text,
    st.sampled_from(HUGE_NUMBERS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from(
        [
            None,
            True,
            False,
            b"bytes",
            b"\xff\xfe",
            timedelta.max,
            timedelta.min,
            timedelta(0),
            datetime.min,
            datetime.max,
            datetime(2026, 1, 1),
            datetime.max.replace(tzinfo=UTC),
        ]
    ),
)
hostile = st.one_of(
    hostile_scalar,
    st.lists(hostile_scalar, max_size=4),
    st.dictionaries(hostile_text, hostile_scalar, max_size=3),
    # built on demand: a strategy holding a 2,000-deep value could not even be printed by hypothesis
    st.builds(nested, st.just(2_000)),
    st.builds(lambda: {"a": nested(2_000)}),
    st.sampled_from([[[["deep"]]], list(range(70)), {}]),
)
# what survives a trip through JSON (no bytes, datetimes or timedeltas), for REST, MCP and import
json_hostile = st.recursive(
    st.one_of(
        hostile_text,
        st.sampled_from([*HUGE_NUMBERS[:8], None, True, False]),
        st.floats(allow_nan=False, allow_infinity=False),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(hostile_text, inner, max_size=3)),
    max_leaves=8,
)


def clear(call):
    """Run ``call``: success, or a StratamemError with a public code other than STORAGE_ERROR."""
    try:
        return call()
    except StratamemError as exc:
        assert exc.code in CLEAR_CODES, f"{exc.code}: {exc.message}"
        assert isinstance(exc.message, str) and exc.message
        shapes.printable(exc.message).encode("utf-8")
        return exc


# -- Python API ---------------------------------------------------------------------------------------------

_STORES: dict[str, sm.Store] = {}


def _store(backend: str, tmp_path_factory) -> sm.Store:
    if backend not in _STORES:
        _STORES[backend] = fresh_store(backend, tmp_path_factory.mktemp("fuzz"))
    return _STORES[backend]


@pytest.fixture(scope="module", autouse=True)
def _close_stores():
    yield
    for store in _STORES.values():
        store.close()
    _STORES.clear()


SESSION_CALLS = ["save", "get", "list", "recent", "search", "delete", "escalate"]


@pytest.mark.parametrize("backend", BACKENDS)
@FAST
@given(method=st.sampled_from(SESSION_CALLS), a=hostile, b=hostile, c=hostile, d=hostile)
def test_session_methods(backend, tmp_path_factory, method, a, b, c, d):
    store = _store(backend, tmp_path_factory)
    session = store.session("fuzz")
    calls = {
        "save": lambda: session.save(a, b, tags=c, category="core", ttl=d),
        "get": lambda: session.get(a),
        "list": lambda: session.list(
            a,
            limit=b,
            cursor=c,
            category=d if isinstance(d, str) else None,
            saved_by=a if isinstance(a, str) else None,
            since=b,
            until=d,
        ),
        "recent": lambda: session.recent(a, since=b, until=c, without_tag=d),
        "search": lambda: session.search(a, max_results=b),
        "delete": lambda: session.delete(a),
        "escalate": lambda: session.escalate(a, b, source=c),
    }
    clear(calls[method])
    clear(lambda: session.save("k", "v", ttl=d))
    clear(lambda: session.save(a, "v", tags=["t"], category=b))


@pytest.mark.parametrize("backend", BACKENDS)
@FAST
@given(
    method=st.sampled_from(["session", "purge", "export", "audit_events", "open"]),
    a=hostile,
    b=hostile,
    c=hostile,
    d=hostile,
)
def test_store_methods(backend, tmp_path_factory, method, a, b, c, d):
    store = _store(backend, tmp_path_factory)
    calls = {
        "session": lambda: store.session(
            a, session_id=b, clearance=c if c is not None else "PUBLIC", peers=d or ()
        ),
        "purge": lambda: store.purge(a, agent_id=b),
        "export": lambda: list(store.export(agent_id=a)),
        "audit_events": lambda: store.audit_events(a if a is not None else "PUBLIC", lineage_id=b),
        "open": lambda: sm.Store(":memory:", languages=a, max_content_bytes=b, synchronous=c).close(),
    }
    clear(calls[method])


def test_the_crashes_reported_in_the_issue_are_validation_errors(store):
    """Each of these raised a raw Python exception (UnicodeEncodeError, OverflowError) or was accepted."""
    s = store.session()
    cases = [
        lambda: s.save("k", "v", tags=["ok", "\ud800"]),
        lambda: s.escalate("INTERNAL", "reason \ud800"),
        lambda: s.escalate("INTERNAL", "reason", source="\udcff"),
        lambda: s.save("k", "v", ttl=1e12),
        lambda: s.save("k", "v", ttl=timedelta.max),
        lambda: s.save("   ", "v"),
        lambda: s.list(tag="\ud800"),
        lambda: store.session(""),
        lambda: store.session("main", session_id="\ud800"),
        lambda: store.session("main", session_id=5),
        lambda: store.session("main", peers="abc"),
    ]
    for case in cases:
        with pytest.raises(sm.ValidationError):
            case()
    assert s.taint_history == [] and s.list() == []


# -- tools (both profiles) and MCP's tool handler ------------------------------------------------------------

PARAM_NAMES = sorted({p.name for spec in TOOLS.values() for p in spec.params})
tool_arguments = st.dictionaries(st.one_of(st.sampled_from(PARAM_NAMES), hostile_text), hostile, max_size=5)


def check_tool_text(text: str | None) -> None:
    assert isinstance(text, str)
    text.encode("utf-8")
    if text.startswith('{"error"'):
        data = json.loads(text)
        assert set(data) == {"error"} and data["error"]["code"] in CLEAR_CODES, data


TOOL_STORE = sm.open_store(":memory:", clock=FakeClock())
TOOL_SESSION = TOOL_STORE.session("fuzz-tools")


@FAST
@given(name=st.sampled_from(sorted(TOOLS)), arguments=st.one_of(tool_arguments, hostile))
def test_every_tool_of_both_profiles(name, arguments):
    check_tool_text(execute(TOOL_SESSION, name, arguments))


@FAST
@given(name=st.sampled_from(sorted(TOOLS)), arguments=tool_arguments)
def test_mcp_tool_handler(name, arguments):
    pytest.importorskip("mcp")
    from stratamem.policy.engine import DEFAULT_POLICY
    from stratamem.server.mcp_tools import Caller, run_tool, tool_result

    spec = TOOLS[name]
    caller = Caller(session=lambda: TOOL_SESSION, policy=DEFAULT_POLICY, profile=spec.profile, origin="mcp")
    text = run_tool(caller, name, arguments)
    check_tool_text(text)
    result = tool_result(text)
    assert result.is_error == text.startswith('{"error"')


# -- REST ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rest(tmp_path_factory):
    pytest.importorskip("starlette")
    sys.path.insert(0, str(Path(__file__).parent / "server"))
    from server_support import auth, write_config
    from starlette.testclient import TestClient

    from stratamem.server.app import build_app
    from stratamem.server.config import load_config
    from stratamem.server.principals import Principals
    from stratamem.server.state import ServerState

    directory = tmp_path_factory.mktemp("rest")
    config = load_config(write_config(directory))
    store = sm.open_store(str(directory / "memory.db"))
    state = ServerState(
        store, Principals(config.principals), profile=config.profile, policy=config.policy.build()
    )
    client = TestClient(build_app(state), raise_server_exceptions=False, headers=auth("alice"))
    session_id = client.post("/v1/sessions").json()["id"]
    yield client, session_id
    store.close()


def _encoded(value: str) -> str:
    from urllib.parse import quote

    return quote(value.encode("utf-8", "surrogatepass"), safe="")


def body_bytes(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=True).encode("ascii")  # lone surrogates travel as \ud800 escapes


RAW_BODIES = [
    b"",
    b"{",
    b"\xff\xfe{}",
    b"[]",
    b"null",
    b"1e999",
    b'{"key": NaN}',
    b"{" * 5000,
    b'{"key":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"key": "\\ud800", "content": "x"}',
    b'{"level": "INTERNAL", "reason": "\\udfff"}',
    b'{"clearance": {"a": [[[]]]}}',
]


def check_http(response) -> None:
    assert response.status_code in {200, 201, 400, 401, 403, 404, 405, 413}, (
        response.status_code,
        response.text,
    )
    data = response.json()
    if response.status_code >= 400 and not (response.status_code == 404 and data.get("found") is False):
        assert set(data) == {"error"} and data["error"]["code"] in CLEAR_CODES | {"UNAUTHENTICATED"}, data


url_text = hostile_text.filter(lambda t: len(t) < 2000)  # longer URLs are refused by the HTTP client itself


@FAST
@given(
    segment=url_text,
    query=st.dictionaries(
        st.sampled_from(["tag", "limit", "cursor", "query", "max_results", "lineage", "after"]),
        url_text,
        max_size=3,
    ),
    body=st.one_of(json_hostile.map(body_bytes), st.sampled_from(RAW_BODIES)),
    route=st.sampled_from(
        ["memories", "memories/{k}", "search", "escalate", "reset", "", "sessions", "audit"]
    ),
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]),
)
def test_rest_endpoints(rest, segment, query, body, route, method):
    client, session_id = rest
    if route == "sessions":
        path = "/v1/sessions"
    elif route == "audit":
        path = "/v1/audit"
    else:
        sid = session_id if len(segment) % 2 else _encoded(segment) or "x"
        path = f"/v1/sessions/{sid}/" + route.replace("{k}", _encoded(segment) or "%20")
    params = {k: v.encode("utf-8", "surrogatepass").decode("latin-1") for k, v in query.items()}
    check_http(client.request(method, path, params=params, content=body))


# -- MCP over streamable HTTP, with the SDK's client ----------------------------------------------------------


def test_mcp_client_gets_tool_errors_not_protocol_failures(tmp_path):
    pytest.importorskip("mcp")
    import anyio

    sys.path.insert(0, str(Path(__file__).parent / "server"))
    from server_support import live_server, mcp_http, write_config

    hostile_calls = [
        ("memory_save", {"key": "   ", "content": "x"}),
        ("memory_save", {"key": "k", "content": "x", "tags": [nested(50)]}),
        ("memory_save", {"key": "k" * 300, "content": "x"}),
        ("memory_list", {"limit": 10**30, "cursor": "c1.!!"}),
        ("memory_list", {"tag": "x" * 20_000}),
        ("memory_search", {"query": {"a": 1}, "max_results": -5}),
        ("memory_get", {"key": ["not", "a", "string"]}),
        ("memory_delete", {"key": "\u0000"}),
    ]
    store = sm.open_store(str(tmp_path / "memory.db"))
    try:
        with live_server(store, write_config(tmp_path)) as server:

            async def main() -> None:
                async with mcp_http(server.url, "alice") as conn:
                    for name, arguments in hostile_calls:
                        is_error, data = await conn.call(name, **arguments)
                        assert is_error and data["error"]["code"] == "VALIDATION_ERROR", (name, data)

            anyio.run(main)
    finally:
        store.close()


# -- CLI -----------------------------------------------------------------------------------------------------

cli_text = st.one_of(hostile_text, st.sampled_from(["PUBLIC", "restricted", "k", "2026-01-01T00:00:00Z"]))


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    command=st.sampled_from(["save", "get", "search", "list", "delete", "purge", "audit", "export"]),
    a=cli_text,
    b=cli_text,
    option=st.sampled_from(["--agent", "--taint", "--session", None]),
    value=cli_text,
)
def test_cli_commands(tmp_path, command, a, b, option, value):
    from click.testing import CliRunner

    from stratamem.cli import UNEXPECTED, cli

    if "\x00" in a + b + value:  # argv cannot carry NUL; the subprocess test below covers real argv
        return
    argv = {
        "save": ["save", a, b, "--tag", value],
        "get": ["get", a],
        "search": ["search", a, "-n", "5"],
        "list": ["list", "--tag", a, "--cursor", b] if b else ["list", "--tag", a],
        "delete": ["delete", a],
        "purge": ["purge", "--before", a],
        "audit": ["audit", "show", "--lineage", a, "--clearance", b],
        "export": ["export"],
    }[command]
    glob = [option, value] if option else []
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "cli.db"), *glob, "--json", *argv])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert UNEXPECTED not in result.output
    assert result.exit_code in {0, 1, 2, 4}, result.output
    if result.exit_code == 1:  # 1 means "not found" and nothing else
        assert command in {"get", "delete"}, result.output


INVALID_UTF8_ARGV = [
    [b"--agent", b"\xff", b"list"],
    [b"--agent", b"", b"list"],
    [b"--session", b"\xc3\x28", b"list"],
    [b"--taint", b"\xfe", b"list"],
    [b"save", b"k\xff", b"content"],
    [b"save", b"k", b"content", b"--tag", b"\xed\xa0\x80"],
    [b"save", b"k", b"content", b"--category", b"\x80"],
    [b"list", b"--tag", b"\xff"],
    [b"list", b"--cursor", b"\xff"],
    [b"purge", b"--before", b"\xff"],
    [b"audit", b"show", b"--lineage", b"\xff"],
    [b"get", b"   "],
]


@pytest.mark.parametrize("argv", INVALID_UTF8_ARGV, ids=lambda a: repr(b" ".join(a)))
def test_cli_argv_that_is_not_utf8_is_a_validation_error(tmp_path, argv):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAMEM_")}
    env["STRATAMEM_HOME"] = str(tmp_path)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    proc = subprocess.run(
        [sys.executable.encode(), b"-m", b"stratamem", b"--db", str(tmp_path / "m.db").encode(), *argv],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert b"Traceback" not in proc.stderr and b"error [VALIDATION_ERROR]" in proc.stderr, proc.stderr


# -- import (JSON Lines) ----------------------------------------------------------------------------------------

GOOD_LINE = {"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "main"}
line_field = st.sampled_from(
    [
        "key",
        "content",
        "level",
        "agent_id",
        "tags",
        "category",
        "session_id",
        "created_at",
        "updated_at",
        "expires_at",
        "lineage_id",
    ]
)


@FAST
@given(
    changes=st.dictionaries(line_field, json_hostile, max_size=3),
    raw=st.one_of(st.none(), st.binary(max_size=40), st.sampled_from(RAW_BODIES)),
)
def test_import_lines(changes, raw):
    line = json.dumps({**GOOD_LINE, **changes}, ensure_ascii=True)
    for text in (line, None if raw is None else raw.decode("utf-8", "surrogateescape").replace("\n", " ")):
        if text is None:
            continue
        memories = clear(lambda t=text: read_lines(io.StringIO(t + "\n"), 64 * 1024))
        if isinstance(memories, list):
            store = sm.open_store(":memory:", clock=FakeClock())
            try:
                clear(lambda store=store, memories=memories: store.import_memories(memories))
            finally:
                store.close()


def test_import_lines_reported_in_the_issue(tmp_path):
    from click.testing import CliRunner

    from stratamem.cli import cli

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        b"\n".join(
            [
                json.dumps({**GOOD_LINE, "created_at": "9999-12-31T23:59:59-14:00"}).encode(),
                json.dumps({**GOOD_LINE, "expires_at": "0001-01-01T00:00:00+01:00"}).encode(),
                b'{"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "m\xffx"}',
                b'{"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "main", "session_id": "\xfe"}',
                b'{"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "main", "lineage_id": "\\ud800"}',
                b'{"key":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            ]
        )
        + b"\n"
    )
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "m.db"), "import", str(bad)])
    assert (result.exit_code == 2 and result.exception is None) or isinstance(result.exception, SystemExit)
    assert result.exit_code == 2
    for number in range(1, 7):
        assert f"line {number}:" in result.output


def test_rest_bodies_reported_in_the_issue(rest):
    """Deep nesting was an HTTP 500 (RecursionError); lone surrogates were a 500 (UnicodeEncodeError)."""
    client, session_id = rest
    memories = f"/v1/sessions/{session_id}/memories"
    cases = [
        ("POST", memories, b'{"key": "k", "content": "c", "tags": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        ("POST", "/v1/sessions", b'{"clearance": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_000 + b"}"),
        ("POST", memories, b'{"key": "k", "content": "c", "tags": ["\\ud800"]}'),
        ("POST", f"/v1/sessions/{session_id}/escalate", b'{"level": "INTERNAL", "reason": "\\udfff"}'),
        ("PUT", memories + "/%20%20%20", b'{"content": "blank key"}'),
    ]
    for method, path, body in cases:
        answer = client.request(method, path, content=body)
        assert answer.status_code == 400, (path, answer.text)
        assert answer.json()["error"]["code"] == "VALIDATION_ERROR"
    assert client.get(memories).json() == {"memories": [], "next_cursor": None}


def test_a_deeply_nested_tool_result_is_cut_as_text():
    """The turn helper's tool-result bound parsed JSON without a depth guard (RecursionError)."""
    from stratamem.turn.tool_results import truncate_tool_message

    deep = "[" * 100_000 + "]" * 100_000
    cut = truncate_tool_message(deep, 100)
    assert cut.startswith("[") and len(cut) < 1000
