"""How ``stratamem.Client`` finds its token and says which server it could not reach."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

import stratamem as sm
from stratamem.server.devtoken import ensure_token, token_path


@pytest.fixture
def dev_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The token a config-less ``stratamem serve`` writes under ``STRATAMEM_HOME``; no STRATAMEM_TOKEN."""
    monkeypatch.setenv("STRATAMEM_HOME", str(tmp_path))
    monkeypatch.delenv("STRATAMEM_TOKEN", raising=False)
    token, _ = ensure_token(token_path())
    return token


@pytest.mark.parametrize("url", ["http://127.0.0.1:8765", "http://localhost:9000", "http://[::1]:8765"])
def test_a_local_server_gets_the_development_token(dev_token: str, url: str) -> None:
    with sm.Client(url) as client:
        assert client.http.headers["Authorization"] == f"Bearer {dev_token}"

    async def headers() -> str:
        async with sm.AsyncClient(url) as client:
            return client.http.headers["Authorization"]

    assert anyio.run(headers) == f"Bearer {dev_token}"


def test_the_development_token_never_goes_to_another_host(dev_token: str) -> None:
    with sm.Client("https://memory.example.com") as client:
        assert "Authorization" not in client.http.headers


def test_an_explicit_or_environment_token_wins(dev_token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with sm.Client("http://127.0.0.1:8765", "given-token-0000000000") as client:
        assert client.http.headers["Authorization"] == "Bearer given-token-0000000000"
    monkeypatch.setenv("STRATAMEM_TOKEN", "env-token-000000000000")
    with sm.Client("http://127.0.0.1:8765") as client:
        assert client.http.headers["Authorization"] == "Bearer env-token-000000000000"


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_server_is_named_by_its_url() -> None:
    port = _closed_port()
    with (
        sm.Client(f"http://127.0.0.1:{port}", "x" * 20, timeout=5) as client,
        pytest.raises(sm.StorageError) as refused,
    ):
        client.list_memories("a-session", tag="secret")
    message = refused.value.message
    assert f"http://127.0.0.1:{port}/v1/" in message and "could not be reached (ConnectError" in message
    assert "secret" not in message  # the query string (here a tag) stays out

    async def health() -> None:
        async with sm.AsyncClient(f"http://127.0.0.1:{port}", "x" * 20, timeout=5) as client:
            await client.health()

    with pytest.raises(sm.StorageError, match=f"http://127.0.0.1:{port}/"):
        anyio.run(health)
