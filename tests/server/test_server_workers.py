"""``stratamem serve --workers N``: REST memory calls in worker processes, same answers, same gate.

The pool is driven directly (no HTTP) where the behaviour is the pool's own: same answers as in the
server's process, taint raised by the server honoured at once, another principal's session not
found, a dead worker replaced. The real ``serve`` process is used for what only it shows: the REST
routes go through the workers, a stop (SIGTERM, or Ctrl-C to the whole process group) loses no
acknowledged write and leaves no process behind, and neither does a killed server.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import signal
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pg_server
import pytest
from click.testing import CliRunner
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from server_support import (
    auth,
    cli_env,
    free_port,
    live_server,
    mcp_http,
    start_serve,
    write_config,
    write_until_stopped,
)

import stratamem as sm
from stratamem.cli import cli
from stratamem.policy import credentials
from stratamem.server import mcp_tools
from stratamem.server import serve as serve_module
from stratamem.server import tool_workers as worker_module
from stratamem.server.config import load_config, parse_config
from stratamem.server.metrics import ServerMetrics
from stratamem.server.observability import MetricsSettings
from stratamem.server.principals import Principal, Principals
from stratamem.server.state import ServerState
from stratamem.server.tool_workers import (
    LOST,
    UNAVAILABLE,
    ToolCall,
    ToolWorkers,
    WorkerSettings,
    check_workers,
    run_call,
    run_tool_call,
)
from stratamem.server.warm import warm_up


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _gone(pids: list[int], timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]
        if not alive:
            return True
        time.sleep(0.05)
    return False


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


def _call(
    workers: ToolWorkers, principal: Principal, session_id: str, name: str, arguments: Any
) -> str | None:
    return workers.call(pickle.dumps(ToolCall(principal, session_id, name, arguments)))


BACKENDS = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.skipif(not pg_server.available(), reason="no PostgreSQL")),
]


@pytest.fixture(params=BACKENDS)
def setup(request, tmp_path):
    """A store (a SQLite file, or a PostgreSQL schema), the server's state over it, the principals."""
    config = load_config(write_config(tmp_path))
    db = str(tmp_path / "memory.db") if request.param == "sqlite" else pg_server.fresh_url()
    store = sm.Store(db)
    state = ServerState(store, Principals(config.principals), policy=config.policy.build())
    settings = WorkerSettings(db, {}, tuple(config.principals), config.policy, config.profile)
    yield state, settings, {p.name: p for p in config.principals}
    store.close()


@pytest.fixture
def pool(setup):
    state, settings, principals = setup
    workers = ToolWorkers(settings, 2)
    yield state, workers, principals
    workers.close()


def test_workers_answer_exactly_as_the_server_process_does(pool):
    state, workers, who = pool
    alice = who["alice"]
    session = state.open_session(alice)
    for i in range(12):
        saved = _call(
            workers, alice, session.id, "memory_save", {"key": f"k{i}", "content": f"fact {i} about otters"}
        )
        assert json.loads(saved or "")["saved"] is True
    calls = [
        ("memory_search", {"query": "otters", "max_results": 5}),
        ("memory_get", {"key": "k3"}),
        ("memory_list", {"limit": 4}),
        ("memory_get", {"key": "missing"}),
        ("memory_search", {"query": 12}),  # bad arguments: the tool's own error
        ("memory_save", {"key": "", "content": "x"}),
    ]
    for name, arguments in calls:
        there = _call(workers, alice, session.id, name, arguments)
        here = run_tool_call(state, ToolCall(alice, session.id, name, arguments))
        assert there == here, name
    batch = [{"key": f"b{i}", "content": f"batch {i}"} for i in range(50)] + [{"key": "bad"}]
    answer = json.loads(_call(workers, alice, session.id, "memory_save_many", {"items": batch}) or "")
    assert answer["error"]["code"] == "VALIDATION_ERROR" and "50" in answer["error"]["message"]
    assert session.get("b0") is None  # all or nothing, in the worker too
    assert state.store.verify_audit() is None


def test_taint_raised_by_the_server_holds_for_the_next_call_in_a_worker(pool):
    state, workers, who = pool
    alice = who["alice"]
    session = state.open_session(alice)
    first = _call(workers, alice, session.id, "memory_save", {"key": "before", "content": "public fact"})
    assert json.loads(first or "")["classification"] == "PUBLIC"
    session.escalate(sm.Level.CONFIDENTIAL, "the user shared a diagnosis")
    for i in range(2 * 8 + 1):  # more calls than one worker has pipes: both workers answer
        saved = json.loads(
            _call(workers, alice, session.id, "memory_save", {"key": f"after{i}", "content": "x"}) or ""
        )
        assert saved["classification"] == "CONFIDENTIAL"
    other = state.open_session(alice)  # a new PUBLIC session sees nothing written at CONFIDENTIAL
    found = json.loads(_call(workers, alice, other.id, "memory_list", {"limit": 50}) or "")
    assert [m["key"] for m in found["memories"]] == ["before"]


def test_another_principals_session_is_not_found_in_a_worker(pool):
    state, workers, who = pool
    session = state.open_session(who["alice"])
    _call(workers, who["alice"], session.id, "memory_save", {"key": "k", "content": "alice's"})
    for principal, session_id in (
        (who["bob"], session.id),
        (who["intern"], session.id),
        (who["alice"], "nope"),
    ):
        answer = json.loads(_call(workers, principal, session_id, "memory_get", {"key": "k"}) or "")
        assert answer["error"]["code"] == "NOT_FOUND"


def test_rest_mcp_and_graph_calls_over_http_run_in_the_workers(setup, tmp_path, monkeypatch):
    """The server's own process cannot run a tool here, so every answer below came from a worker."""
    state, settings, _ = setup
    workers = ToolWorkers(settings, 2)

    def not_here(*args: object, **kwargs: object) -> None:
        raise AssertionError("a tool ran in the server's process")

    for module in (worker_module, mcp_tools):
        monkeypatch.setattr(module, "execute", not_here)
    try:
        with live_server(state.store, tmp_path / "server.toml", workers) as server:
            with server.client("alice") as rest:
                sid = rest.post("/v1/sessions").json()["id"]
                assert (
                    rest.put(f"/v1/sessions/{sid}/memories/k", json={"content": "otters"}).status_code == 200
                )
                found = rest.post(f"/v1/sessions/{sid}/search", json={"query": "otters"}).json()
                assert [r["key"] for r in found["results"]] == ["k"]
                entity = {"name": "Sam", "entityType": "person", "observations": ["likes tea"]}
                made = rest.post(f"/v1/sessions/{sid}/graph/create_entities", json={"entities": [entity]})
                assert made.status_code == 200 and made.json() == {"entities": [entity]}
                assert rest.post(f"/v1/sessions/{sid}/graph/memory_save", json={}).status_code == 404

            async def scenario() -> None:
                async with mcp_http(server.url, "alice") as mcp:
                    error, saved = await mcp.call("memory_save", key="note", content="public words")
                    assert not error and saved["classification"] == "PUBLIC"
                    bound = {
                        h["x-stratamem-session-id"] for h in mcp.response_headers if h.get("mcp-session-id")
                    }
                    with server.client("alice") as rest:
                        raised = rest.post(
                            f"/v1/sessions/{bound.pop()}/escalate", json={"level": "CONFIDENTIAL"}
                        )
                        assert raised.status_code == 200
                    error, saved = await mcp.call("memory_save", key="contract", content="terms")
                    assert not error and saved["classification"] == "CONFIDENTIAL"
                    error, got = await mcp.call("memory_get", key="k")  # the agent's, saved over REST
                    assert not error and got["content"] == "otters"

            anyio.run(scenario)
    finally:
        workers.close()
    levels = {m.key: m.level for m in state.store.export("alice")}
    assert levels == {"k": sm.Level.PUBLIC, "note": sm.Level.PUBLIC, "contract": sm.Level.CONFIDENTIAL}
    assert state.store.verify_audit() is None


def test_arguments_nested_deeper_than_pickle_goes_get_the_same_answer_and_cost_no_pipe(pool):
    """JSON takes ~1,000 levels, pickle fewer: such a call runs in the server, and no pipe is lost to it."""
    state, workers, who = pool
    alice = who["alice"]
    session = state.open_session(alice)
    deep: Any = "x"
    for _ in range(900):
        deep = [deep]
    call = ToolCall(alice, session.id, "memory_save", {"key": "k", "content": deep})
    expected = run_tool_call(state, call)
    assert json.loads(expected)["error"]["code"] == "VALIDATION_ERROR"
    state.workers = workers
    for _ in range(3 * 8 * len(workers)):  # more than every pipe of every worker
        assert run_call(state, call) == expected
    ok = run_call(state, ToolCall(alice, session.id, "memory_save", {"key": "k", "content": "flat"}))
    assert json.loads(ok or "")["saved"] is True


def test_a_worker_that_died_idle_is_replaced_before_a_call_reaches_it(pool):
    state, workers, who = pool
    alice = who["alice"]
    session = state.open_session(alice)
    old = [w.process for w in workers._workers]
    os.kill(old[0].pid, signal.SIGKILL)
    old[0].join(timeout=30)  # wholly gone (a killed process's threads outlive its zombie leader a while)
    answers = [
        _call(workers, alice, session.id, "memory_save", {"key": f"k{i}", "content": "x"}) for i in range(40)
    ]
    assert all(a and '"saved": true' in a for a in answers), answers  # it had no call: nothing lost
    new = [w.process for w in workers._workers]
    assert new[1] is old[1] and new[0] is not old[0] and all(p.is_alive() for p in new)
    assert state.store.verify_audit() is None


def test_a_worker_killed_during_a_call_answers_that_it_may_have_been_applied(pool):
    state, workers, who = pool
    alice = who["alice"]
    session = state.open_session(alice)
    for worker in list(workers._workers):
        os.kill(worker.process.pid, signal.SIGSTOP)  # frozen: the call below reaches a live pipe
    answer: list[str | None] = []
    caller = threading.Thread(
        target=lambda: answer.append(
            _call(workers, alice, session.id, "memory_save", {"key": "k", "content": "x"})
        )
    )
    caller.start()
    time.sleep(0.2)
    for worker in list(workers._workers):
        os.kill(worker.process.pid, signal.SIGKILL)
    caller.join(timeout=60)
    assert answer == [json.dumps({"error": {"code": "STORAGE_ERROR", "message": LOST}})]
    again = _call(workers, alice, session.id, "memory_save", {"key": "k", "content": "y"})
    assert again and '"saved": true' in again
    assert workers.restarts >= 1  # /metrics: stratamem_worker_restarts


def test_store_operations_run_in_workers_reach_the_server_metrics(pool):
    """The server process never saves here: a save_many timing can only have come back with a reply."""
    state, workers, who = pool
    state.workers = workers
    metrics = ServerMetrics(state, MetricsSettings(), "127.0.0.1")
    alice = who["alice"]
    session = state.open_session(alice)
    saved = _call(workers, alice, session.id, "memory_save", {"key": "k", "content": "about otters"})
    assert saved and '"saved": true' in saved
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(metrics.registry).decode())}
    counts = {
        s.labels["operation"]: s.value
        for s in families["stratamem_store_operation_duration_seconds"].samples
        if s.name.endswith("_count")
    }
    assert counts.get("save_many", 0) >= 1, counts
    assert families["stratamem_worker_processes"].samples[0].value == 2
    assert workers.restarts == 0


def test_workers_that_cannot_be_replaced_end_the_call_with_an_error(pool, tmp_path):
    """A store no new process can open (here: a directory): a clear error after a try a worker, no hang."""
    state, workers, who = pool
    session = state.open_session(who["alice"])
    workers.settings = dataclasses.replace(workers.settings, db=str(tmp_path))
    for worker in list(workers._workers):
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.join(timeout=30)
    answer = json.loads(_call(workers, who["alice"], session.id, "memory_get", {"key": "k"}) or "")
    assert answer["error"]["code"] == "STORAGE_ERROR" and answer["error"]["message"] in (UNAVAILABLE, LOST)


def test_a_worker_killed_during_a_batch_leaves_all_of_it_or_none(pool):
    """SIGKILL while a 2,000-item batch may be anywhere from arriving to committing: never half of it."""
    state, workers, who = pool
    alice = who["alice"]
    session = state.open_session(alice)
    items = [{"key": f"b{i}", "content": f"batch item {i} about otters"} for i in range(2000)]
    answer: list[str | None] = []
    caller = threading.Thread(
        target=lambda: answer.append(_call(workers, alice, session.id, "memory_save_many", {"items": items}))
    )
    caller.start()
    time.sleep(0.05)
    for worker in list(workers._workers):
        os.kill(worker.process.pid, signal.SIGKILL)
    caller.join(timeout=120)
    assert answer and answer[0] is not None
    stored = {m.key for m in state.store.export("alice")}
    if LOST in answer[0]:
        assert len(stored) in (0, len(items))
    else:
        assert json.loads(answer[0])["saved"] == len(items) and len(stored) == len(items)
    assert state.store.verify_audit() is None
    for _ in range(3):  # the other killed worker's pipes answer LOST once, then it is replaced too
        after = _call(workers, alice, session.id, "memory_get", {"key": "b0"})
        if after is not None and LOST not in after:
            break
    assert after is not None and ("batch item 0" in after) == (len(stored) == len(items)), after


def test_closing_the_pool_stops_every_worker(setup):
    _, settings, _ = setup
    workers = ToolWorkers(settings, 3)
    pids = [w.process.pid for w in workers._workers]
    workers.close()
    assert _gone(pids, timeout=5)


@pytest.mark.parametrize("count", [0, -1, 65, True, "2", 1.5])
def test_bad_worker_counts_are_refused(count):
    with pytest.raises(sm.ValidationError, match="workers"):
        check_workers(count, "memory.db")


def test_workers_need_a_database_other_processes_can_open(tmp_path):
    assert check_workers(1, ":memory:") == 1
    with pytest.raises(sm.ValidationError, match=":memory:"):
        check_workers(2, ":memory:")


@pytest.mark.parametrize("value", ["0", "65", "true", '"2"', "1.5"])
def test_config_workers_must_be_a_count(tmp_path, value):
    with pytest.raises(sm.ValidationError, match=r"server\.workers"):
        parse_config(f"[server]\nworkers = {value}\n", tmp_path / "bad.toml")
    assert parse_config("[server]\nworkers = 4\n", tmp_path / "ok.toml").workers == 4


def test_serve_refuses_a_bad_workers_option(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATAMEM_HOME", str(tmp_path))
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "m.db"), "serve", "--port", str(free_port()), "--workers", "0"]
    )
    assert result.exit_code == 2 and "workers must be" in result.output


def test_warm_up_loads_the_credential_scrubber_and_the_model(tmp_path, monkeypatch):
    credentials._plugin_patterns.cache_clear()
    with sm.open_store(str(tmp_path / "m.db"), search_mode="hybrid", embedder="hash") as store:
        embedded: list[str] = []
        monkeypatch.setattr(
            type(store.semantic.embedder), "embed_query", lambda self, text: embedded.append(text)
        )
        warm_up(store, model=False)
        assert credentials._plugin_patterns.cache_info().currsize == 1 and embedded == []
        warm_up(store)
        assert embedded == ["warm up"]


@pytest.mark.parametrize(("workers", "model"), [("1", True), ("2", False)])
def test_serve_loads_the_model_where_the_searches_run(tmp_path, monkeypatch, workers, model):
    """One process: the server searches, so it loads the model before listening; with workers they do."""
    warmed: list[bool] = []

    class Pool:
        def __init__(self, settings: WorkerSettings, count: int) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(serve_module, "warm_up", lambda store, model=True: warmed.append(model))
    monkeypatch.setattr(serve_module, "ToolWorkers", Pool)
    monkeypatch.setattr(serve_module.uvicorn.Server, "run", lambda self: None)
    config = write_config(tmp_path)
    result = CliRunner().invoke(
        cli,
        [
            "--db",
            str(tmp_path / "m.db"),
            "serve",
            "--port",
            str(free_port()),
            "--config",
            str(config),
            "--workers",
            workers,
        ],
    )
    assert result.exit_code == 0, result.output
    assert warmed == [model]


def test_serve_warms_up_before_it_listens(tmp_path, monkeypatch):
    """The first client of a fresh server must not wait while detect-secrets' detectors load."""
    loaded_when_listening = []
    credentials._plugin_patterns.cache_clear()
    monkeypatch.setattr(
        serve_module.uvicorn.Server,
        "run",
        lambda self: loaded_when_listening.append(credentials._plugin_patterns.cache_info().currsize),
    )
    config = write_config(tmp_path)
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "m.db"), "serve", "--port", str(free_port()), "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    assert loaded_when_listening == [1]


@pytest.mark.parametrize("stop", ["sigterm", "ctrl-c to the group"])
def test_serve_with_workers_stops_cleanly_and_keeps_every_acknowledged_write(tmp_path, stop):
    db, port = tmp_path / "memory.db", free_port()
    proc = start_serve(
        tmp_path, db, port, "--config", str(write_config(tmp_path)), "--workers", "2", start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        workers = _children(proc.pid)
        assert len(workers) >= 2  # the workers (and multiprocessing's resource tracker)
        with httpx2.Client(base_url=url, headers=auth("alice")) as client:
            sid = client.post("/v1/sessions").json()["id"]
        writers = write_until_stopped(url, sid, "alice", 6)
        if stop == "sigterm":
            proc.send_signal(signal.SIGTERM)
        else:
            os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the workers too
        writers.join()
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
        assert _gone(workers)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not writers.refused and len(writers.acknowledged) >= 100
    with sm.open_store(str(db)) as store:
        assert set(writers.acknowledged) <= {m.key for m in store.export("alice")}
        assert store.verify_audit() is None


def test_workers_of_a_killed_server_exit(tmp_path):
    db, port = tmp_path / "memory.db", free_port()
    proc = start_serve(tmp_path, db, port, "--config", str(write_config(tmp_path)), "--workers", "2")
    try:
        workers = _children(proc.pid)
        assert len(workers) >= 2
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", headers=auth("alice"), timeout=30) as client:
            sid = client.post("/v1/sessions").json()["id"]
            assert client.put(f"/v1/sessions/{sid}/memories/k", json={"content": "kept"}).status_code == 200
            found = client.post(f"/v1/sessions/{sid}/search", json={"query": "kept"}).json()
            assert [r["key"] for r in found["results"]] == ["k"]
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert _gone(workers)  # their pipes closed: they finish, close the store and exit
    with sm.open_store(str(db)) as store:
        assert store.verify_audit() is None


def test_the_development_server_runs_workers_too(tmp_path):
    db, port = tmp_path / "memory.db", free_port()
    env = cli_env(tmp_path)
    proc = start_serve(tmp_path, db, port, "--workers", "2", env=env)
    try:
        token = (tmp_path / "home" / "server-token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as client:
            sid = client.post("/v1/sessions").json()["id"]
            assert (
                client.post(f"/v1/sessions/{sid}/memories", json={"key": "k", "content": "v"}).status_code
                == 200
            )
            assert client.get(f"/v1/sessions/{sid}/memories/k").json()["content"] == "v"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "2 worker processes" in (proc.stderr.read() if proc.stderr else "")
    finally:
        if proc.poll() is None:
            proc.kill()
