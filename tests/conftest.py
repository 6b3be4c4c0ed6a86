"""Shared fixtures: stores on every backend the machine can run, and a controllable clock."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

import stratamem as sm


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
    urls = {"sqlite-memory": ":memory:", "sqlite-file": str(tmp_path / "memory.db")}
    if os.environ.get("STRATAMEM_TEST_PG"):
        urls["postgres"] = os.environ["STRATAMEM_TEST_PG"]
    return urls


BACKENDS = ["sqlite-memory", "sqlite-file"] + (["postgres"] if os.environ.get("STRATAMEM_TEST_PG") else [])


def fresh_store(backend: str, tmp_dir, **options) -> sm.Store:
    """A new empty store outside pytest's fixtures, for hypothesis tests (caller closes it)."""
    options.setdefault("clock", FakeClock())
    if backend == "postgres":
        store = sm.open_store(os.environ["STRATAMEM_TEST_PG"], **options)
        store.backend.reset_for_tests()
        return store
    if backend == "sqlite-file":
        import tempfile

        return sm.open_store(tempfile.mkstemp(suffix=".db", dir=tmp_dir)[1], **options)
    return sm.open_store(":memory:", **options)


@pytest.fixture(params=BACKENDS)
def make_store(request, tmp_path):
    """A factory for fresh stores on one backend; every store is closed afterwards."""
    opened: list[sm.Store] = []
    counter = iter(range(10_000))

    def factory(**options) -> sm.Store:
        url = backend_urls(tmp_path)[request.param]
        if request.param == "sqlite-file":
            url = str(tmp_path / f"memory-{next(counter)}.db")
        options.setdefault("clock", FakeClock())
        store = sm.open_store(url, **options)
        if request.param == "postgres":
            store.backend.reset_for_tests()
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
