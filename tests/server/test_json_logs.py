"""``serve --log-format json``: one JSON object per line, with the request id, credentials scrubbed."""

from __future__ import annotations

import io
import json
import logging
import signal
from collections.abc import Iterator

import httpx2
import pytest
from server_support import cli_env, free_port, start_serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from stratamem.policy.redact import scrubbed_logger
from stratamem.server.http_observe import ObservedRequests
from stratamem.server.json_logs import JsonLines

SECRET = "api_key=sk-live-0123456789abcdefghijklmnop"
FIELDS = {"time", "level", "logger", "message", "request_id"}


class _Metrics:
    def request(self, *args: object) -> None:
        pass


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    logger = logging.getLogger("stratamem.test_json_logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield stream
    logger.removeHandler(handler)


def _app() -> TestClient:
    log = scrubbed_logger("stratamem.test_json_logs")

    async def handled(request: Request) -> PlainTextResponse:
        log.warning("handled a request with %s", SECRET)
        try:
            raise ValueError(f"failed on {SECRET}")
        except ValueError:
            log.exception("and it failed\nover two lines")
        return PlainTextResponse("ok")

    routes = [Route("/x", handled)]
    app = Starlette(routes=routes)
    return TestClient(ObservedRequests(app, routes, _Metrics()))  # type: ignore[arg-type]


def test_each_line_is_an_object_with_the_request_id_and_no_credential(lines):
    answer = _app().get("/x", headers={"X-Request-Id": "req-42"})
    assert answer.headers["x-request-id"] == "req-42"
    records = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert len(records) == 2  # the newline in a message stays inside its line
    for record in records:
        assert set(record) >= FIELDS
        assert record["request_id"] == "req-42"
        assert record["logger"] == "stratamem.test_json_logs"
        assert "sk-live-0123456789abcdefghijklmnop" not in json.dumps(record)
    assert records[0]["level"] == "WARNING"
    assert "handled a request with" in records[0]["message"]
    assert records[1]["message"] == "and it failed\nover two lines"
    assert "ValueError" in records[1]["exception"]


def test_outside_a_request_the_id_is_null(lines):
    logging.getLogger("stratamem.test_json_logs").info("idle")
    (record,) = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert record["request_id"] is None
    assert record["time"].endswith("+00:00")


def test_serve_log_format_json_writes_only_json_lines(tmp_path):
    port = free_port()
    proc = start_serve(tmp_path, tmp_path / "m.db", port, "--log-format", "json", env=cli_env(tmp_path))
    try:
        answer = httpx2.get(f"http://127.0.0.1:{port}/v1/health/ready", headers={"X-Request-Id": "probe-1"})
        assert answer.headers["x-request-id"] == "probe-1"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    records = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    assert records
    for record in records:
        assert set(record) >= FIELDS, record
    messages = " ".join(r["message"] for r in records)
    assert "stratamem serve: http://127.0.0.1" in messages  # the banner is a log line too
    assert any(r["logger"].startswith("uvicorn") for r in records)
