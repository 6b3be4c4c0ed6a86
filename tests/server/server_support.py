"""Helpers and fixtures for the server tests: principals, servers on free ports, MCP clients.

A module rather than a conftest (like ``tools_support``), so it never shadows ``tests/conftest.py``;
test modules import the fixtures they use. Importing it skips the module when the ``server`` extra
is not installed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import stratamem as sm
from stratamem.server.app import build_app
from stratamem.server.config import load_config
from stratamem.server.principals import Principals, token_digest
from stratamem.server.state import ServerState
from stratamem.server.tool_workers import ToolWorkers

SRC = Path(__file__).resolve().parents[2] / "src"

# name -> (token, agent, clearance, extra TOML lines)
PRINCIPALS = {
    "alice": ("alice-token-0123456789", "alice", "CONFIDENTIAL", ""),
    "bob": ("bob-token-0123456789ab", "bob", "RESTRICTED", ""),
    "intern": ("intern-token-012345678", "alice", "INTERNAL", ""),
    "reader": ("reader-token-012345678", "alice", "CONFIDENTIAL", "read_only = true\n"),
    "ops": ("ops-token-0123456789ab", "ops", "RESTRICTED", "operator = true\n"),
}


def token(name: str) -> str:
    return PRINCIPALS[name][0]


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(name)}"}


def config_text(extra: str = "") -> str:
    parts = [extra]
    for name, (tok, agent, clearance, lines) in PRINCIPALS.items():
        parts.append(
            f'[[principals]]\nname = "{name}"\ntoken_sha256 = "{token_digest(tok)}"\nagent = "{agent}"\n'
            f'clearance = "{clearance}"\n{lines}'
        )
    return "\n".join(parts)


def write_config(directory: Path, extra: str = "") -> Path:
    path = directory / "server.toml"
    path.write_text(config_text(extra), encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    store: sm.Store
    state: ServerState
    server: uvicorn.Server = field(repr=False)

    def client(self, who: str | None = None, **options: Any) -> httpx2.Client:
        return httpx2.Client(base_url=self.url, headers=auth(who) if who else {}, timeout=30, **options)


@contextlib.contextmanager
def live_server(
    store: sm.Store, config_path: Path, workers: ToolWorkers | None = None
) -> Iterator[LiveServer]:
    """The real app under uvicorn in a thread, on a free loopback port (``workers``: ``serve --workers``)."""
    config = load_config(config_path)
    state = ServerState(
        store,
        Principals(config.principals),
        profile=config.profile,
        policy=config.policy.build(),
        workers=workers,
    )
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(state),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
            access_log=False,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.005)
    try:
        yield LiveServer(f"http://127.0.0.1:{port}", store, state, server)
    finally:
        server.should_exit = server.force_exit = True  # the test is over: no need to drain
        thread.join(timeout=15)


@dataclass
class McpConnection:
    session: ClientSession
    response_headers: list[dict[str, str]]

    async def call(self, name: str, **arguments: Any) -> tuple[bool, Any]:
        """(isError, parsed JSON text) of one tool call."""
        result = await self.session.call_tool(name, arguments)
        return result.is_error, json.loads(result.content[0].text)


@contextlib.asynccontextmanager
async def mcp_http(
    url: str, who: str | None, headers: dict[str, str] | None = None
) -> AsyncIterator[McpConnection]:
    """A stateful (initialize-handshake) MCP session over streamable HTTP, with the SDK's client."""
    seen: list[dict[str, str]] = []

    async def remember(response: httpx2.Response) -> None:
        seen.append(dict(response.headers))

    all_headers = {**(auth(who) if who else {}), **(headers or {})}
    async with (
        httpx2.AsyncClient(headers=all_headers, timeout=30, event_hooks={"response": [remember]}) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield McpConnection(session, seen)


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAMEM_")}
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env["STRATAMEM_HOME"] = str(tmp_path / "home")
    env.update(extra)
    return env


def start_serve(
    tmp_path: Path,
    db: Path,
    port: int,
    *args: str,
    env: dict[str, str] | None = None,
    start_new_session: bool = False,
) -> subprocess.Popen[str]:
    """``stratamem serve`` as a real subprocess; waits until /v1/health answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "stratamem", "--db", str(db), "serve", "--port", str(port), *args],
        env=env or cli_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=start_new_session,
    )
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited early ({proc.returncode}): {proc.stderr.read()}")
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                return proc
        except httpx2.TransportError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("serve did not start")
        time.sleep(0.05)


@dataclass
class Writers:
    """Threads PUTting distinct keys into one session until the server stops answering."""

    threads: list[threading.Thread]
    acknowledged: list[str]  # keys answered 200: each must be in the store afterwards
    refused: list[int]  # any other status

    def join(self) -> None:
        for t in self.threads:
            t.join(timeout=60)


def write_until_stopped(url: str, sid: str, who: str, count: int, at_least: int = 100) -> Writers:
    """Start ``count`` writers; return once ``at_least`` writes are acknowledged (or 30 s passed)."""
    writers = Writers([], [], [])
    lock = threading.Lock()

    def writer(n: int) -> None:
        with httpx2.Client(base_url=url, headers=auth(who), timeout=30) as client:
            for i in range(100_000):
                key = f"w{n}-{i}"
                try:
                    answer = client.put(
                        f"/v1/sessions/{sid}/memories/{key}", json={"content": f"write {i} of writer {n}"}
                    )
                except httpx2.TransportError:
                    return  # the server has stopped taking requests
                with lock:
                    if answer.status_code == 200:
                        writers.acknowledged.append(key)
                    else:
                        writers.refused.append(answer.status_code)

    writers.threads = [threading.Thread(target=writer, args=(n,)) for n in range(count)]
    for t in writers.threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(writers.acknowledged) < at_least and time.monotonic() < deadline:
        time.sleep(0.01)
    return writers


# fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def server_config(tmp_path) -> Path:
    return write_config(tmp_path)


@pytest.fixture
def server_store(tmp_path) -> Iterator[sm.Store]:
    store = sm.open_store(str(tmp_path / "memory.db"))
    yield store
    store.close()


@pytest.fixture
def server(server_store, server_config) -> Iterator[LiveServer]:
    """The app under uvicorn on a free loopback port, with the principals above."""
    with live_server(server_store, server_config) as live:
        yield live


@contextlib.contextmanager
def served_with_config(tmp_path: Path, config_text: str) -> Iterator[tuple[str, Path]]:
    """A real ``stratamem serve --config`` over a fresh store: its base URL and the store's path."""
    config = tmp_path / "server.toml"
    config.write_text(config_text, encoding="utf-8")
    db = tmp_path / "memory.db"
    port = free_port()
    proc = start_serve(tmp_path, db, port, "--config", str(config))
    try:
        yield f"http://127.0.0.1:{port}", db
    finally:
        proc.terminate()
        proc.wait(timeout=30)
