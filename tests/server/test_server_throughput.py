"""The server's per-request plumbing: one socket write per answer, an answer's status without parsing it.

Nothing here measures time (``bench/bench_server.py`` does): these tests pin
the behaviour the speed comes from — a response head and its body leave in
one write, writes are never lost, reordered or held past one turn of the
event loop; an answer's HTTP status is what parsing it would give — and,
on a real ``stratamem serve``, concurrent clients get what a lone client
gets, whole, and the audit chain still verifies.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from server_support import auth, start_serve, write_config
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState as UvicornState

import stratamem as sm
from stratamem import shapes
from stratamem.server.http_protocol import CorkedHttpToolsProtocol, CorkedTransport
from stratamem.server.responses import STATUS, error_status, from_tool_text

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


class FakeTransport:
    """Records what reaches the socket, in order."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.events: list[str] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.events.append("write")

    def close(self) -> None:
        self.closing = True
        self.events.append("close")

    def abort(self) -> None:
        self.closing = True
        self.events.append("abort")

    def write_eof(self) -> None:
        self.events.append("eof")

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5555), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def set_protocol(self, protocol: Any) -> None: ...


def corked() -> tuple[FakeTransport, CorkedTransport]:
    raw = FakeTransport()
    return raw, CorkedTransport(raw)  # type: ignore[arg-type]


def test_a_held_head_leaves_with_the_next_write():
    raw, transport = corked()
    transport.hold()
    transport.write(HEAD)
    assert raw.writes == [] and transport.get_write_buffer_size() == len(HEAD)
    transport.write(b"{}")
    assert raw.writes == [HEAD + b"{}"]
    transport.write(b"more")  # nothing held any more: straight through
    assert raw.writes == [HEAD + b"{}", b"more"]


def test_without_hold_writes_pass_straight_through_in_order():
    raw, transport = corked()
    transport.write(b"chunk one")
    transport.write(memoryview(b"chunk two"))
    transport.writelines([b"a", b"b"])
    transport.flush()
    assert raw.writes == [b"chunk one", b"chunk two", b"ab"]


def test_flush_close_and_eof_send_what_is_held_first_and_abort_drops_it():
    raw, transport = corked()
    transport.hold()
    transport.write(HEAD)
    transport.flush()
    transport.flush()
    assert raw.writes == [HEAD]
    transport.write(b"{}")
    assert raw.writes == [HEAD, b"{}"]
    raw, transport = corked()
    transport.hold()
    transport.write(HEAD)
    transport.close()
    assert raw.events == ["write", "close"] and raw.writes == [HEAD]
    raw, transport = corked()
    transport.hold()
    transport.write(HEAD)
    transport.write_eof()
    assert raw.events == ["write", "eof"]
    raw, transport = corked()
    transport.hold()
    transport.write(HEAD)
    transport.abort()
    assert raw.events == ["abort"] and raw.writes == []
    assert transport.is_closing()  # anything else is the transport's own


async def _json_app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        return
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"{}"})


async def _streaming_app(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"one", "more_body": True})
    await send({"type": "http.response.body", "body": b"two", "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def _exchange(protocol: type, app: Any, request: bytes) -> list[bytes]:
    """What ``protocol`` writes to the socket for ``request`` answered by ``app``."""
    loop = asyncio.new_event_loop()
    try:
        config = Config(app, log_level="warning", lifespan="off")
        config.load()
        raw = FakeTransport()

        async def exchange() -> None:
            proto = protocol(config=config, server_state=UvicornState(), app_state={})
            proto.connection_made(raw)
            proto.data_received(request)
            for _ in range(20):
                await asyncio.sleep(0)

        loop.run_until_complete(exchange())
        return raw.writes
    finally:
        loop.close()


GET = b"GET /x HTTP/1.1\r\nhost: t\r\n\r\n"


@pytest.mark.parametrize("protocol, writes", [(CorkedHttpToolsProtocol, 1), (HttpToolsProtocol, 2)])
def test_the_server_protocol_answers_in_one_write(protocol, writes):
    """The regression guard: uvicorn's own protocol writes the head and the body apart."""
    sent = _exchange(protocol, _json_app, GET)
    assert len(sent) == writes
    answer = b"".join(sent)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\n{}")


def test_a_head_request_and_a_stream_are_sent_whole():
    head = _exchange(CorkedHttpToolsProtocol, _json_app, b"HEAD /x HTTP/1.1\r\nhost: t\r\n\r\n")
    assert len(head) == 1 and head[0].startswith(b"HTTP/1.1 200 OK") and head[0].endswith(b"\r\n\r\n")
    plain = b"".join(_exchange(HttpToolsProtocol, _streaming_app, GET))
    stream = _exchange(CorkedHttpToolsProtocol, _streaming_app, GET)
    assert b"".join(stream) == plain and stream[0].endswith(b"3\r\none\r\n")  # the head rode with part one
    pipelined = b"".join(_exchange(CorkedHttpToolsProtocol, _json_app, GET + GET))
    assert pipelined.count(b"HTTP/1.1 200 OK") == 2 and pipelined.endswith(b"{}")


# a real server ---------------------------------------------------------------------------


def _request(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(raw)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def live_serve(tmp_path) -> Iterator[tuple[int, str]]:
    """``stratamem serve`` as deployed (the corked protocol)."""
    from server_support import free_port

    db = tmp_path / "s.db"
    port = free_port()
    config = write_config(tmp_path)
    proc = start_serve(tmp_path, db, port, "--config", str(config))
    try:
        yield port, str(db)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_concurrent_clients_get_a_lone_clients_answers_whole(live_serve):
    import httpx2

    port, db = live_serve
    url = f"http://127.0.0.1:{port}"
    with httpx2.Client(base_url=url, headers=auth("alice"), timeout=60) as c:
        sid = c.post("/v1/sessions").json()["id"]
        for i in range(12):
            body = {"key": f"k{i}", "content": f"note {i} about harbour cranes and tide tables"}
            assert c.post(f"/v1/sessions/{sid}/memories", json=body).status_code in (200, 201)
        queries = ["harbour cranes", "tide tables", "note 3", "cranes tide"] * 3
        # The server embeds pending records between requests, and a hybrid answer changes as vectors
        # arrive: compare answers once every record has its vector (the scrape's gauge says so).
        deadline = time.monotonic() + 120
        while "stratamem_pending_vectors 0.0" not in c.get("/metrics").text:
            assert time.monotonic() < deadline, "the server never embedded the saved records"
            c.post(f"/v1/sessions/{sid}/search", json={"query": "harbour"})
            time.sleep(0.2)
        alone = [c.post(f"/v1/sessions/{sid}/search", json={"query": q}).text for q in queries]

    answers: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def client(n: int) -> None:
        try:
            # the writes come from another agent: alice's answers may not depend on them (noninterference),
            # while a write to her own view would move BM25's statistics and so her scores
            with (
                httpx2.Client(base_url=url, headers=auth("alice"), timeout=60) as mine,
                httpx2.Client(base_url=url, headers=auth("bob"), timeout=60) as other,
            ):
                bob = other.post("/v1/sessions").json()["id"]
                answers[n] = [
                    mine.post(f"/v1/sessions/{sid}/search", json={"query": q}).text for q in queries
                ]
                assert other.post(
                    f"/v1/sessions/{bob}/memories", json={"key": f"c{n}", "content": "x"}
                ).is_success
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and len(answers) == 8
    strip = lambda text: json.loads(text)  # noqa: E731 - the answers carry no per-call fields
    for n in range(8):
        assert [strip(a) for a in answers[n]] == [strip(a) for a in alone]

    # keep-alive with two requests on one connection, a HEAD, and a file answer: all whole
    two = _request(
        port,
        b"GET /v1/health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
        b"GET /v1/health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
    )
    assert two.count(b"HTTP/1.1 200 OK") == 2 and two.count(b'"status"') == 2
    head = _request(port, b"HEAD /ui HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and head.endswith(b"\r\n\r\n")
    page = _request(port, b"GET /ui HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
    declared = int(page.split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
    assert len(page.split(b"\r\n\r\n", 1)[1]) == declared

    with sm.open_store(db) as store:
        assert store.verify_audit() is None


# an answer's status without parsing it ----------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["error", "found", "code", "message", "results", 'x"found"']), inner, max_size=3
        )
    ),
    max_leaves=12,
)


def _status_by_parsing(text: str) -> int:
    """The status as ``from_tool_text`` decided it before it skipped parsing ordinary answers."""
    try:
        data = json.loads(text)
    except ValueError:
        return 200
    if shapes.is_error(data):
        return error_status(data["error"]["code"], data["error"]["message"])
    if isinstance(data, dict) and data.get("found") is False:
        return 404
    return 200


@given(
    st.one_of(
        _json,
        st.builds(
            lambda c, m: {"error": {"code": c, "message": m}}, st.sampled_from(sorted(STATUS)), st.text()
        ),
        st.builds(
            lambda extra: {"found": False, **extra}, st.dictionaries(st.text(max_size=5), st.integers())
        ),
    ),
    st.booleans(),
)
def test_an_answers_status_is_what_parsing_it_gives(shape, compact):
    text = json.dumps(shape, separators=(",", ":")) if compact else shapes.dumps(shape)
    assert _outcome(lambda: from_tool_text(text).status_code) == _outcome(lambda: _status_by_parsing(text))


def _outcome(status: Any) -> object:
    """A status, or the kind of error computing it raised (a malformed error shape fails alike both ways)."""
    try:
        return status()
    except (TypeError, KeyError) as exc:
        return type(exc)
