"""Shared fixtures: stores on every backend the machine can run, and a controllable clock."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta

import pg_server
import pytest

import stratamem as sm

# The suite written for lexical search keeps testing it whether or not the
# semantic extra is installed; semantic and hybrid tests choose their mode.
os.environ.setdefault("STRATAMEM_SEARCH_MODE", "lexical")


class FakeClock:
    """Strictly increasing time: every reading is one millisecond after the last."""

    def __init__(self, start: datetime = datetime(2026, 1, 1, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def backend_urls(tmp_path) -> dict[str, str]:
    """One URL per backend; PostgreSQL URLs name a new schema, so each is an empty, isolated store."""
    urls = {
        "sqlite-memory": ":memory:",
        "sqlite-file": str(tmp_path / "memory.db"),
        "markdown": f"markdown://{tmp_path / 'markdown'}",
    }
    if "postgres" in BACKENDS:
        urls["postgres"] = pg_server.fresh_url()
    return urls


# PostgreSQL runs whenever it can: the embedded server wheel (or STRATAMEM_TEST_PG) is installed.
BACKENDS = ["sqlite-memory", "sqlite-file", "markdown"] + (["postgres"] if pg_server.available() else [])


def fresh_store(backend: str, tmp_dir, **options) -> sm.Store:
    """A new empty store outside pytest's fixtures, for hypothesis tests (caller closes it)."""
    options.setdefault("clock", FakeClock())
    if backend == "postgres":
        return sm.open_store(pg_server.fresh_url(), **options)
    if backend == "sqlite-file":
        import tempfile

        return sm.open_store(tempfile.mkstemp(suffix=".db", dir=tmp_dir)[1], **options)
    if backend == "markdown":
        import tempfile

        return sm.open_store("markdown://" + tempfile.mkdtemp(dir=tmp_dir), **options)
    return sm.open_store(":memory:", **options)


@pytest.fixture(params=BACKENDS)
def make_store(request, tmp_path):
    """A factory for fresh stores on one backend; every store is closed afterwards."""
    opened: list[sm.Store] = []
    counter = iter(range(10_000))

    def factory(**options) -> sm.Store:
        if request.param == "sqlite-file":
            url = str(tmp_path / f"memory-{next(counter)}.db")
        elif request.param == "markdown":
            url = f"markdown://{tmp_path / f'markdown-{next(counter)}'}"
        else:
            url = backend_urls(tmp_path)[request.param]
        options.setdefault("clock", FakeClock())
        store = sm.open_store(url, **options)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store):
    return make_store()


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
