"""OpenTelemetry: one span per request, policy/store/embedding spans under it, no content in any span."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from server_support import auth, live_server, mcp_http, write_config

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

import stratamem as sm
from stratamem import tracing
from stratamem.server.app import build_app
from stratamem.server.config import load_config
from stratamem.server.principals import Principals
from stratamem.server.state import ServerState

MARK = "zq7spanleak"
HOSTILE = f"{MARK} the launch code is {MARK}-4711 and the villa is in {MARK}ville"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    tracing.use_provider(provider)  # not the process-wide provider: other tests stay untraced
    yield exported
    tracing.use_provider(None)
    provider.shutdown()


@pytest.fixture
def client(tmp_path) -> Iterator[TestClient]:
    config = load_config(write_config(tmp_path))
    store = sm.open_store(str(tmp_path / "t.db"), search_mode="hybrid", embedder="hash")
    state = ServerState(store, Principals(config.principals), policy=config.policy.build())
    yield TestClient(build_app(state), raise_server_exceptions=False)
    store.close()


def _everything_in(span: ReadableSpan) -> str:
    parts: list[Any] = [span.name, *(span.attributes or {}).items()]
    for event in span.events:
        parts += [event.name, *(event.attributes or {}).items()]
    return repr(parts)


def _request_spans(spans: tuple[ReadableSpan, ...]) -> list[ReadableSpan]:
    return [s for s in spans if s.kind is SpanKind.SERVER]


def _descendants(root: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> list[ReadableSpan]:
    found, frontier = [], {root.context.span_id}
    while frontier:
        children = [s for s in spans if s.parent is not None and s.parent.span_id in frontier]
        found += children
        frontier = {s.context.span_id for s in children}
    return found


def test_one_span_per_request_with_policy_store_and_embedding_children(client, exporter):
    headers = auth("alice")
    sid = client.post("/v1/sessions", headers=headers).json()["id"]
    exporter.clear()
    saved = client.put(f"/v1/sessions/{sid}/memories/{MARK}", headers=headers, json={"content": HOSTILE})
    assert saved.status_code == 200
    spans = exporter.get_finished_spans()
    (request,) = _request_spans(spans)
    assert request.parent is None
    assert request.name == "PUT /v1/sessions/{session_id}/memories/{key}"
    assert request.attributes["http.route"] == "/v1/sessions/{session_id}/memories/{key}"
    assert request.attributes["http.response.status_code"] == 200
    assert request.attributes["stratamem.request_id"] == saved.headers["x-request-id"]
    below = _descendants(request, spans)
    names = {s.name for s in below}
    assert {"stratamem.tool", "stratamem.policy", "stratamem.store"} <= names
    assert all(s.context.trace_id == request.context.trace_id for s in below)
    assert len(below) == len(spans) - 1  # every span of the request hangs under it

    exporter.clear()
    found = client.get(f"/v1/sessions/{sid}/search", params={"query": f"{MARK} launch"}, headers=headers)
    assert found.status_code == 200 and MARK in found.text
    spans = exporter.get_finished_spans()
    (request,) = _request_spans(spans)
    below = _descendants(request, spans)
    embeddings = [s for s in below if s.name == "stratamem.embedding"]
    assert embeddings, [s.name for s in spans]  # the query (and the pending record) embedded under it
    assert {s.attributes["stratamem.operation"] for s in below if s.name == "stratamem.store"} >= {"search"}


def test_no_span_holds_content_keys_or_queries(client, exporter):
    headers = auth("alice")
    sid = client.post("/v1/sessions", headers=headers).json()["id"]
    base = f"/v1/sessions/{sid}"
    client.put(f"{base}/memories/{MARK}", headers=headers, json={"content": HOSTILE, "tags": [MARK]})
    client.post(f"{base}/memories", headers=headers, json={"key": f"{MARK}2", "content": HOSTILE})
    client.get(f"{base}/memories/{MARK}", headers=headers)
    client.get(f"{base}/search", params={"query": HOSTILE}, headers=headers)
    client.post(f"{base}/search", headers=headers, json={"query": HOSTILE, "mode": "semantic"})
    client.get(f"{base}/memories", params={"tag": MARK}, headers=headers)
    client.delete(f"{base}/memories/{MARK}", headers=headers)
    client.post(f"{base}/graph/{MARK}", headers=headers, json={"x": MARK})
    client.get(f"/{MARK}", headers={"X-Request-Id": f"{MARK} with space"})
    spans = exporter.get_finished_spans()
    assert len(_request_spans(spans)) == 10
    for span in spans:
        assert MARK not in _everything_in(span), span.name
        for value in (span.attributes or {}).values():
            assert isinstance(value, int | float | bool) or len(value) <= 80


def test_without_a_provider_nothing_is_recorded(client, exporter):
    tracing.use_provider(None)  # the global provider: none configured in the tests, so no-op spans
    assert client.get("/v1/health").status_code == 200
    assert exporter.get_finished_spans() == ()


def test_mcp_tool_calls_are_spans_of_their_request_and_counted(tmp_path, exporter):
    """An MCP call's span hangs under the POST that carried it (the SDK runs it with that request's context)."""
    config = write_config(tmp_path)
    store = sm.open_store(str(tmp_path / "mcp.db"))
    try:
        with live_server(store, config) as live:

            async def scenario() -> None:
                async with mcp_http(live.url, "alice") as mcp:
                    failed, _ = await mcp.call("memory_save", key=MARK, content=HOSTILE)
                    assert not failed
                    failed, found = await mcp.call("memory_search", query=MARK)
                    assert not failed and found["results"]

            anyio.run(scenario)
            scrape = httpx2.get(f"{live.url}/metrics").text
    finally:
        store.close()
    assert MARK not in scrape
    tools = [s for s in text_string_to_metric_families(scrape) if s.name == "stratamem_tool_calls"]
    counted = {
        (x.labels["tool"], x.labels["outcome"]): x.value
        for x in tools[0].samples
        if x.name.endswith("_total")
    }
    assert counted[("memory_save", "ok")] == 1 and counted[("memory_search", "ok")] == 1
    spans = exporter.get_finished_spans()
    requests = {s.context.span_id: s for s in _request_spans(spans)}
    calls = [s for s in spans if s.name == "stratamem.tool"]
    assert {s.attributes["stratamem.tool"] for s in calls} == {"memory_save", "memory_search"}
    for call in calls:
        assert call.parent is not None and call.parent.span_id in requests
        assert requests[call.parent.span_id].name == "POST /mcp"
    # each under the request that carried it, not under the one that opened the MCP session
    assert len({call.parent.span_id for call in calls}) == 2
    first = min(requests.values(), key=lambda s: s.start_time)
    assert first.context.span_id not in {call.parent.span_id for call in calls}
    for span in spans:
        assert MARK not in _everything_in(span), span.name


def test_a_process_wide_provider_set_at_startup_is_used(monkeypatch):
    """What ``opentelemetry-instrument`` configures is found (and kept: it can be set only once)."""
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    monkeypatch.setattr(tracing, "_global", None)
    monkeypatch.setattr(tracing, "_next_check", 0.0)
    monkeypatch.setattr(tracing._trace, "get_tracer_provider", lambda: provider)
    with tracing.span("stratamem.store", {"stratamem.operation": "get"}):
        pass
    (span,) = exported.get_finished_spans()
    assert span.name == "stratamem.store" and span.attributes["stratamem.operation"] == "get"
    provider.shutdown()
