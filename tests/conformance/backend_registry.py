"""The backends the conformance suite runs on: one factory per backend, registered once.

Every store-parametrized test in the suite (the ``make_store`` and ``store`` fixtures, ``BACKENDS``
and ``fresh_store`` of ``tests/conftest.py``) takes its backends from ``REGISTRY``, so a new backend
is one ``register`` call here: the whole suite, the conformance modules first, then runs on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pg_server


@dataclass(frozen=True)
class BackendFactory:
    """How the tests open a new, empty store on one backend.

    ``url(place)`` gives the store URL for a fresh store; ``place`` is a path that does not exist yet
    and belongs to this store alone (a file or directory backend creates it; others ignore it).
    ``available()`` says whether this machine can run the backend (a missing server skips it).
    """

    name: str
    url: Callable[[Path], str]
    available: Callable[[], bool] = lambda: True


REGISTRY: dict[str, BackendFactory] = {}


def register(factory: BackendFactory) -> None:
    if factory.name in REGISTRY:
        raise ValueError(f"backend {factory.name!r} is registered twice")
    REGISTRY[factory.name] = factory


register(BackendFactory("sqlite-memory", lambda place: ":memory:"))
register(BackendFactory("sqlite-file", lambda place: f"{place}.db"))
register(BackendFactory("markdown", lambda place: f"markdown://{place}"))
# PostgreSQL runs whenever it can: the embedded server wheel (or STRATAMEM_TEST_PG) is installed.
# Each URL names a new schema, so each store is empty and isolated.
register(BackendFactory("postgres", lambda place: pg_server.fresh_url(), available=pg_server.available))


def available_backends() -> list[str]:
    """The registered backends this machine can run, in registration order."""
    return [name for name, factory in REGISTRY.items() if factory.available()]
