"""Both servers embed a store's pending records while idle, and stop that before the store closes."""

from __future__ import annotations

import threading

import anyio
import pytest

import stratamem as sm
from stratamem.search.idle import IdleEmbedder

pytest.importorskip("onnxruntime")


def imported(path, count: int = 24) -> str:
    """A store whose memories all wait for vectors, as after `import --no-embed`."""
    db = str(path / "m.db")
    with sm.open_store(db, search_mode="hybrid") as store:
        store.session("main").save_many(
            [{"key": f"k{i}", "content": f"note {i} on the boat"} for i in range(count)]
        )
        assert store.semantic.embedder is not None  # recorded: the records are pending
        assert store.backend.vectors.all_pending_vectors(1)[1] == count
    return db


def waiting(db: str) -> int:
    with sm.open_store(db, search_mode="hybrid") as store:
        return store.backend.vectors.all_pending_vectors(1)[1]


def until_embedded(db: str) -> int:
    """Pending records left once they are all embedded, or after a generous while (never a speed bound)."""
    for _ in range(600):
        left = waiting(db)
        if left == 0:
            return 0
        threading.Event().wait(0.1)
    return left


def test_stdio_embeds_pending_records_while_the_client_is_quiet(tmp_path, monkeypatch):
    from stratamem.server import stdio

    db = imported(tmp_path)
    monkeypatch.setenv("STRATAMEM_SEARCH_MODE", "hybrid")
    left = []

    async def serve(caller, extra, idle):
        assert isinstance(idle, IdleEmbedder) and idle.running
        left.append(await anyio.to_thread.run_sync(until_embedded, db))

    monkeypatch.setattr(stdio, "_serve", serve)
    stdio.run_stdio(db, stdio.StdioSettings())
    assert left == [0]


def test_serve_embeds_pending_records_while_no_request_arrives(tmp_path, monkeypatch):
    import uvicorn

    from stratamem.server import serve as serve_module

    db = imported(tmp_path)
    monkeypatch.setenv("STRATAMEM_SEARCH_MODE", "hybrid")
    monkeypatch.setenv("STRATAMEM_HOME", str(tmp_path / "home"))
    left = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: left.append(until_embedded(db)))
    serve_module.serve(db, port=0)
    assert left == [0]


def test_each_http_request_keeps_the_idle_embedder_waiting():
    from stratamem.server.serve import touching

    ticks = [10.0]
    idle = IdleEmbedder(None, quiet=1.0, clock=lambda: ticks[0])  # type: ignore[arg-type]
    ticks[0] = 20.0
    assert idle.idle_for() == 0  # quiet for ten seconds
    seen = []

    async def app(scope, receive, send):
        seen.append(idle.idle_for())  # the request has just begun
        ticks[0] = 25.0  # and takes five seconds

    anyio.run(touching(app, idle), {"type": "http"}, None, None)
    assert seen == [1.0]
    assert idle.idle_for() == 1.0  # quiet counts again from the request's end
    ticks[0] = 26.0
    assert idle.idle_for() == 0
