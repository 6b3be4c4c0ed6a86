"""GET /metrics: Prometheus text that parses, by route template and tool, with no memory content in it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from server_support import auth, free_port, start_serve, write_config

pytest.importorskip("prometheus_client")

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

import stratamem as sm
from stratamem.server.app import build_app
from stratamem.server.config import load_config, parse_config
from stratamem.server.observability import MetricsSettings
from stratamem.server.principals import Principals
from stratamem.server.state import ServerState
from stratamem.storage import audit_store
from stratamem.storage.timed import TimedBackend

MARK = "zq7hostile"  # in every piece of user data below; must appear in no scrape
HOSTILE_KEY = f"{MARK}-key/with slash"
HOSTILE = f'{MARK} content"}} 1\nstratamem_fake_total{{x="{MARK}"}} 9\n# HELP {MARK}\n'
SECRET = "api_key=sk-live-0123456789abcdefghijklmnop"  # refused as content; sent as a query


def _state(db: Path, config: Path, **store_options: Any) -> ServerState:
    cfg = load_config(config)
    store = sm.open_store(str(db), **store_options)
    return ServerState(store, Principals(cfg.principals), profile=cfg.profile, policy=cfg.policy.build())


@pytest.fixture
def state(tmp_path) -> Iterator[ServerState]:
    made = _state(tmp_path / "m.db", write_config(tmp_path), search_mode="hybrid", embedder="hash")
    yield made
    made.store.close()


def _client(state: ServerState, host: str = "127.0.0.1", **settings: Any) -> TestClient:
    app = build_app(state, host=host, metrics=MetricsSettings(**settings))
    return TestClient(app, raise_server_exceptions=False)


def _hostile_traffic(client: TestClient | httpx2.Client) -> None:
    """Saves, reads, searches and failures, every one carrying hostile user data."""
    headers = auth("alice")
    sid = client.post("/v1/sessions", headers=headers).json()["id"]
    base = f"/v1/sessions/{sid}"
    assert client.post(
        f"{base}/memories", headers=headers, json={"key": HOSTILE_KEY, "content": HOSTILE}
    ).is_success
    assert client.put(
        f"{base}/memories/{MARK}", headers=headers, json={"content": HOSTILE, "tags": [MARK]}
    ).is_success
    assert client.get(f"{base}/memories/{MARK}", headers=headers).status_code == 200
    assert client.get(f"{base}/search", params={"query": MARK}, headers=headers).status_code == 200
    client.post(f"{base}/search", headers=headers, json={"query": f"{HOSTILE} {SECRET}", "mode": "semantic"})
    client.post(f"{base}/memories", headers=headers, json={"key": MARK, "content": SECRET})  # refused
    client.get(f"{base}/memories", params={"tag": MARK}, headers=headers)
    client.post(f"{base}/graph/{MARK}", headers=headers, json={})  # an unknown tool name
    client.get(f"/v1/sessions/{MARK}/memories/{MARK}", headers=headers)  # someone else's (no) session
    client.get(f"/{MARK}/nowhere", headers=headers)  # no route at all
    client.get(f"{base}/memories/{MARK}", headers={"Authorization": f"Bearer {MARK}"})  # bad token


def _families(text: str) -> dict[str, Any]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def _labels(family: Any, label: str) -> set[str]:
    return {sample.labels[label] for sample in family.samples if label in sample.labels}


def test_a_scrape_parses_and_holds_no_memory_content(state):
    client = _client(state)
    _hostile_traffic(client)
    answer = client.get("/metrics")  # the test client is not a token holder: loopback is open
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    text = answer.text
    assert MARK not in text
    assert "sk-live" not in text
    assert "alice" not in text  # agent names only when the operator opts in
    families = _families(text)  # prometheus-client's own parser takes it
    routes = _labels(families["stratamem_http_requests"], "route")
    assert "/v1/sessions/{session_id}/memories/{key}" in routes
    assert "/v1/sessions/{session_id}/graph/{tool}" in routes
    assert "(unmatched)" in routes
    assert all(route.startswith(("/", "(unmatched)")) for route in routes)
    statuses = _labels(families["stratamem_http_requests"], "status")
    assert {"200", "401", "404"} <= statuses
    tools = _labels(families["stratamem_tool_calls"], "tool")
    assert {"memory_save", "memory_get", "memory_search", "memory_list"} <= tools
    assert tools <= {"memory_save", "memory_get", "memory_search", "memory_list", "other"}
    outcomes = _labels(families["stratamem_tool_calls"], "outcome")
    assert "ok" in outcomes and outcomes <= {
        "ok",
        "VALIDATION_ERROR",
        "NOT_FOUND",
        "POLICY_BLOCKED",
        "STORAGE_ERROR",
    }
    operations = _labels(families["stratamem_store_operation_duration_seconds"], "operation")
    assert {"save_many", "get", "search", "open_session"} <= operations
    assert "stratamem_http_request_duration_seconds" in families


def test_scrape_time_gauges_read_the_store(state):
    client = _client(state)
    _hostile_traffic(client)
    families = _families(client.get("/metrics").text)
    chain = families["stratamem_audit_chain_length"].samples[0].value
    assert chain == audit_store.tip(state.store.backend)[0] > 0
    pending = families["stratamem_pending_vectors"].samples[0].value
    assert pending == state.store.backend.vectors.all_pending_vectors(0)[1]
    assert families["stratamem_worker_processes"].samples[0].value == 0
    assert families["stratamem_worker_restarts"].samples[0].value == 0


class _Workers:
    """Stands for ``ToolWorkers`` at scrape time: two processes, three replaced."""

    restarts = 3

    def __len__(self) -> int:
        return 2

    def call(self, message: bytes) -> str | None:
        raise AssertionError("no tool call in this test")


def test_worker_restarts_are_counted(state):
    state.workers = _Workers()
    families = _families(_client(state).get("/metrics").text)
    assert families["stratamem_worker_processes"].samples[0].value == 2
    assert families["stratamem_worker_restarts"].samples[0].value == 3


def test_agent_labels_only_when_the_operator_opts_in(state, monkeypatch):
    client = _client(state, agents=True)
    _hostile_traffic(client)
    text = client.get("/metrics").text
    families = _families(text)
    assert "alice" in _labels(families["stratamem_http_requests"], "agent")
    assert "alice" in _labels(families["stratamem_tool_calls"], "agent")
    assert MARK not in text
    monkeypatch.setenv("STRATAMEM_METRICS_AGENTS", "true")
    assert MetricsSettings().with_env({"STRATAMEM_METRICS_AGENTS": "true"}).agents
    assert not MetricsSettings(agents=True).with_env({"STRATAMEM_METRICS_AGENTS": "0"}).agents
    with pytest.raises(sm.ValidationError, match="STRATAMEM_METRICS_AGENTS"):
        MetricsSettings().with_env({"STRATAMEM_METRICS_AGENTS": "maybe"})


def test_off_loopback_metrics_need_an_operator_token(state):
    client = _client(state, host="0.0.0.0")
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": f"Bearer {MARK}"}).status_code == 401
    refused = client.get("/metrics", headers=auth("alice"))
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "POLICY_BLOCKED"
    assert client.get("/metrics", headers=auth("ops")).status_code == 200


def test_metrics_access_is_configurable(state, tmp_path):
    assert _client(state, host="0.0.0.0", access="open").get("/metrics").status_code == 200
    assert _client(state, access="operator").get("/metrics").status_code == 401
    assert _client(state, access="off").get("/metrics", headers=auth("ops")).status_code == 404
    config = parse_config('[server]\nmetrics = "operator"\nmetrics_agents = true\n', tmp_path / "s.toml")
    assert config.metrics == MetricsSettings("operator", True)
    with pytest.raises(sm.ValidationError, match=r"server\.metrics must be one of"):
        parse_config('[server]\nmetrics = "public"\n', tmp_path / "s.toml")
    with pytest.raises(sm.ValidationError, match=r"server\.log_format must be one of"):
        parse_config('[server]\nlog_format = "xml"\n', tmp_path / "s.toml")


def test_store_operations_are_timed_once_at_the_protocol_boundary(state):
    _client(state)
    _client(state)  # a second app on the same store adds an observer, not a second wrapper
    backend = state.store.backend
    assert isinstance(backend, TimedBackend)
    assert not isinstance(backend.inner, TimedBackend)
    assert len(backend.observers) == 2


def test_request_ids_are_echoed_when_well_formed_and_made_otherwise(state):
    client = _client(state)
    assert (
        client.get("/v1/health", headers={"X-Request-Id": "abc-123.x:y"}).headers["x-request-id"]
        == "abc-123.x:y"
    )
    for bad in ("has space", "x" * 129, "<script>", ""):
        made = client.get("/v1/health", headers={"X-Request-Id": bad}).headers["x-request-id"]
        assert made != bad and len(made) == 32
    one, two = (client.get("/v1/health").headers["x-request-id"] for _ in range(2))
    assert one != two
    assert client.get("/nowhere").headers["x-request-id"]  # errors carry it too


# readiness ---------------------------------------------------------------------------------------


def test_ready_names_each_check(tmp_path):
    state = _state(tmp_path / "r.db", write_config(tmp_path))  # lexical: no model needed
    try:
        answer = _client(state).get("/v1/health/ready")
        assert answer.status_code == 200
        body = answer.json()
        assert body["status"] == "ready"
        assert set(body["checks"]) == {"database", "migrations", "model"}
        assert all(check["ok"] for check in body["checks"].values())
        assert body["checks"]["migrations"]["recorded"] == body["checks"]["migrations"]["expected"]
    finally:
        state.store.close()


def test_not_ready_until_the_model_is_loaded(state):
    client = _client(state)
    answer = client.get("/v1/health/ready")
    assert answer.status_code == 503
    assert answer.json()["checks"]["model"] == {"ok": False, "detail": "not loaded"}
    from stratamem.server.warm import warm_up

    warm_up(state.store)
    assert client.get("/v1/health/ready").status_code == 200


def test_not_ready_when_the_schema_moved_on(tmp_path):
    db = tmp_path / "s.db"
    state = _state(db, write_config(tmp_path))
    try:
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE meta SET value = '999' WHERE name = 'schema_version'")
        answer = _client(state).get("/v1/health/ready")
        assert answer.status_code == 503
        assert answer.json()["checks"]["migrations"] == {
            "ok": False,
            "detail": "not current",
            "recorded": 999,
            "expected": answer.json()["checks"]["migrations"]["expected"],
        }
    finally:
        state.store.close()


def test_not_ready_when_the_database_is_unreachable(tmp_path):
    state = _state(tmp_path / "u.db", write_config(tmp_path))
    client = _client(state)
    state.store.close()
    answer = client.get("/v1/health/ready")
    assert answer.status_code == 503
    checks = answer.json()["checks"]
    assert checks["database"] == {"ok": False, "detail": "not reachable"}
    assert not checks["migrations"]["ok"]


def test_a_running_serve_process_answers_a_scrape_without_content(tmp_path):
    """``stratamem serve`` as deployed: hostile content saved and searched first, then scraped."""
    port = free_port()
    config = write_config(tmp_path)
    proc = start_serve(tmp_path, tmp_path / "live.db", port, "--config", str(config))
    try:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            _hostile_traffic(client)
            answer = client.get("/metrics")
            ready = client.get("/v1/health/ready")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert answer.status_code == 200
    assert MARK not in answer.text and "sk-live" not in answer.text and "alice" not in answer.text
    families = _families(answer.text)
    assert "/v1/sessions/{session_id}/memories/{key}" in _labels(families["stratamem_http_requests"], "route")
    assert families["stratamem_audit_chain_length"].samples[0].value > 0
    assert ready.status_code == 200, ready.text  # serve loads the model before it listens
