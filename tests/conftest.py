"""Shared fixtures: stores on every backend the machine can run, and a controllable clock."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import stratamem as sm

# The conformance suite's registry and property helpers are imported by name across the suite.
sys.path.insert(0, str(Path(__file__).parent / "conformance"))
from backend_registry import REGISTRY, available_backends

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


# The backends every store-parametrized test runs on, from the conformance suite's registry.
BACKENDS = available_backends()


def fresh_store(backend: str, tmp_dir, **options) -> sm.Store:
    """A new empty store outside pytest's fixtures, for hypothesis tests (caller closes it)."""
    options.setdefault("clock", FakeClock())
    place = Path(tempfile.mkdtemp(dir=tmp_dir)) / "store"  # unique across a test's examples
    return sm.open_store(REGISTRY[backend].url(place), **options)


@pytest.fixture(params=BACKENDS)
def make_store(request, tmp_path):
    """A factory for fresh stores on one backend; every store is closed afterwards."""
    opened: list[sm.Store] = []
    counter = iter(range(10_000))

    def factory(**options) -> sm.Store:
        options.setdefault("clock", FakeClock())
        store = sm.open_store(REGISTRY[request.param].url(tmp_path / f"store-{next(counter)}"), **options)
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
