"""Serving memory to any agent: MCP over stdio, and one HTTP server with MCP, REST and docs.

Needs the ``server`` extra (``pip install 'stratamem[server]'``: the official
``mcp`` SDK, starlette, uvicorn). The entry points below import it lazily so
the core package and CLI work without it and say what to install when it is
missing.

Modules, one job each:

- ``principals`` / ``config`` / ``devtoken`` — who may call, from the operator's TOML file
- ``state`` — the store, principals and policy shared by requests; session ownership
- ``mcp_tools`` — the memory tools as an MCP server (``tools.definitions`` + ``tools.execute``)
- ``stdio`` — ``stratamem mcp``; ``mcp_http`` + ``bindings`` — MCP at ``/mcp``
- ``rest`` / ``payloads`` / ``responses`` / ``openapi`` — the ``/v1`` API and its docs
- ``auth`` — bearer tokens; ``app`` — assembly; ``serve`` — uvicorn and shutdown
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, Unpack

from ..extras import hint, require

EXTRA_HINT = hint("server")


def require_extra() -> None:
    """Fail with an actionable message when the server dependencies are missing."""
    require("server")


class ServeOptions(TypedDict, total=False):
    """``serve``'s options, named here so the lazy entry point needs no copy of its signature."""

    host: str | None
    port: int | None
    config_path: str | None
    agent: str | None
    workers: int | None
    log_format: str | None
    banner: str | None


def run_serve(db: str, **options: Unpack[ServeOptions]) -> None:
    """``stratamem serve``: HTTP with MCP at /mcp, REST at /v1 and docs, until SIGTERM."""
    require_extra()
    from .serve import serve

    serve(db, **options)


def run_mcp(db: str, flags: Mapping[str, Any], config_path: str | None = None) -> None:
    """``stratamem mcp``: the memory tools over MCP stdio for one operator-chosen session."""
    require_extra()
    from .config import load_config
    from .stdio import resolve_settings, run_stdio

    config = load_config(config_path) if config_path else None
    run_stdio(db, resolve_settings(flags, config=config))


__all__ = ["EXTRA_HINT", "ServeOptions", "require_extra", "run_mcp", "run_serve"]
