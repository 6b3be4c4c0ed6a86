"""``stratamem serve``: choose principals and address, then run the app under uvicorn.

Without a config file the server is a local development server: one token
(``$STRATAMEM_HOME/server-token``, mode 0600) for the local user, and only
on a loopback address. Uvicorn handles SIGTERM/SIGINT: it stops accepting,
lets in-flight requests finish (up to ``graceful_timeout``), then the
lifespan closes the MCP sessions and the store is closed last — a write that
was acknowledged has been committed, and one in progress still commits. The
process then exits 0: the signal was the ordinary way to stop it.

While no HTTP request has begun or ended for a moment, an ``IdleEmbedder``
embeds pending records (after an import, say) in the background; it is
stopped before the store is closed.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import uvicorn

from ..errors import ValidationError
from ..policy.redact import scrubbed_logger
from ..search.idle import IdleEmbedder
from ..store import Store
from .app import build_app
from .config import DEFAULT_HOST, DEFAULT_PORT, ServerConfig, load_config
from .devtoken import dev_principal, ensure_token, is_loopback, token_path
from .http_protocol import CorkedHttpToolsProtocol
from .json_logs import use_json_logs
from .observability import check_log_format
from .principals import Principals
from .state import ServerState
from .tool_workers import ToolWorkers, WorkerSettings, check_workers
from .warm import warm_up

logger = scrubbed_logger("stratamem.server")


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def announce(text: str, as_json: bool = False) -> None:
    """Tell the operator something on stderr: as it is, or as a log line when the logs are JSON (so every
    line of stderr parses)."""
    if as_json:
        logger.info("%s", text)
    else:
        print(text, file=sys.stderr, flush=True)


def dev_principals(
    agent: str, host: str, port: int, home: Path | None = None, *, as_json: bool = False
) -> Principals:
    """The development token's principal, after telling the user where the token is and how to use it."""
    path = token_path(home)
    token, created = ensure_token(path)
    url = _url(host, port)
    state = "created" if created else "using"
    announce(
        f"stratamem serve: no --config given; {state} the local development token in {path} (mode 0600)\n"
        f"  it acts as agent {agent!r} with clearance RESTRICTED; for other agents or remote access use --config\n"
        f'  REST: curl -X POST -H "Authorization: Bearer $(cat {path})" {url}/v1/sessions\n'
        f"  console: {url}/ui (sign in with that token)\n"
        f"  MCP:  {url}/mcp with the header 'Authorization: Bearer <the token in that file>'\n"
        f"  docs: {url}/docs",
        as_json,
    )
    return Principals([dev_principal(token, agent)])


def check_port_free(host: str, port: int) -> None:
    """Refuse, before any banner, an address another program already listens on (uvicorn would only say
    so after printing that it started); the same socket options uvicorn binds with."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise ValidationError(f"cannot listen on {host}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            reason = "in use by another program" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise ValidationError(
                f"cannot listen on {_url(host, port)}: the port is {reason}; choose another with --port"
                if exc.errno == errno.EADDRINUSE
                else f"cannot listen on {_url(host, port)}: {reason}"
            ) from None


def touching(app: Any, idle: IdleEmbedder) -> Any:
    """``app`` with every HTTP request's start and end noted by the idle embedder (ASGI middleware)."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        idle.touch()
        try:
            await app(scope, receive, send)
        finally:
            idle.touch()

    return wrapped


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


@contextlib.contextmanager
def _stop_signals_handled() -> Iterator[None]:
    """Let uvicorn's re-raised SIGTERM/SIGINT end ``run()`` with exit status 0, closing the store first.

    Uvicorn drains on the first signal, restores the previous handlers and
    raises the signal again; with the default handlers that would kill the
    process before ``finally`` runs. Underneath, the signal becomes a
    ``SystemExit(0)`` that unwinds through ``finally`` (also for a signal
    that arrives before uvicorn has installed its own handlers).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, _exit_cleanly) for sig in stops}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(
    db: str,
    *,
    host: str | None = None,
    port: int | None = None,
    config_path: str | None = None,
    agent: str | None = None,
    workers: int | None = None,
    log_format: str | None = None,
    banner: str | None = None,
) -> None:
    """Serve ``db`` over HTTP until SIGTERM/SIGINT (memory tool calls in ``workers`` processes when > 1).

    ``banner``: the caller's first line for the operator (the CLI names the database), said like every
    other line: as text, or as a log line under ``log_format="json"``.
    """
    config = load_config(config_path) if config_path else ServerConfig()
    host = host or config.host or DEFAULT_HOST
    port = port if port is not None else (config.port if config.port is not None else DEFAULT_PORT)
    as_json = check_log_format(log_format or config.log_format, "--log-format") == "json"
    if as_json:
        use_json_logs(config.log_level)
    if banner:
        announce(banner, as_json)
    if config.source is None:
        if not is_loopback(host):
            raise ValidationError(
                f"refusing to listen on {host} without a config file: the development token is for "
                "loopback only; give --config with [[principals]] to serve other hosts"
            )
        principals = dev_principals(agent or "main", host, port, as_json=as_json)
    elif not config.principals:
        raise ValidationError(f"{config.source}: no [[principals]]; the server would accept no token")
    else:
        principals = Principals(config.principals)
    check_port_free(host, port)  # the configuration's own refusals first: they need no socket
    policy = config.policy.build()
    turns = config.turn_config(os.environ)  # a bad price or retention stops here, before listening
    count = check_workers(config.workers if workers is None else workers, db)
    metrics = config.metrics.with_env(os.environ)
    store_options: dict[str, Any] = {
        "retention": turns.retention,
        "max_answer_chars": config.answer_chars(os.environ),
        **config.declassify.store_options(),
    }
    store = Store(db, **store_options)
    pool: ToolWorkers | None = None
    idle = IdleEmbedder(store.semantic)
    try:
        if config.compartments:  # before any principal's session is cleared for one
            store.define_compartments(*config.compartments)
        warm_up(store, model=count == 1)  # no client's first call waits for a load
        if count > 1:
            settings = WorkerSettings(db, store_options, tuple(principals), config.policy, config.profile)
            pool = ToolWorkers(settings, count)
        state = ServerState(
            store,
            principals,
            profile=config.profile,
            policy=policy,
            turn_settings=turns.settings,
            workers=pool,
            idempotency_ttl=timedelta(hours=config.idempotency_hours),
        )
        app = touching(build_app(state, host=host, allowed_hosts=config.allowed_hosts, metrics=metrics), idle)
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=host,
                port=port,
                log_level=config.log_level,
                log_config=None if as_json else uvicorn.config.LOGGING_CONFIG,
                access_log=False,
                server_header=False,
                lifespan="on",
                http=CorkedHttpToolsProtocol,
                timeout_graceful_shutdown=math.ceil(config.graceful_timeout),
            )
        )
        shown = f", memory tool calls in {count} worker processes" if pool else ""
        announce(
            f"stratamem serve: {_url(host, port)} (MCP at /mcp, REST at /v1, console at /ui, docs at /docs"
            f"{shown})",
            as_json,
        )
        idle.start()
        try:
            with _stop_signals_handled():
                server.run()
        except SystemExit as exc:
            if not server.started and exc.code not in (0, None):  # uvicorn could not bind
                raise ValidationError(
                    f"cannot listen on {_url(host, port)} (in use, or not permitted)"
                ) from None
            raise
    finally:
        idle.stop()  # the batch in hand is written before the store closes
        if pool is not None:
            pool.close()  # after uvicorn has drained: the workers finish what they started
        store.close()
