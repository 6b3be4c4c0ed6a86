"""What this install resolves to: version, store location, settings, and a ready MCP client snippet.

``stratamem config`` prints it, and ``serve`` / ``mcp`` name the database
location on stderr, so a user never has to guess which file an agent writes
to. Passwords in PostgreSQL URLs are never printed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .env_settings import SECRET, SETTINGS
from .extras import EXTRAS, installed
from .server.devtoken import token_path
from .store import MARKDOWN_SCHEME, default_home, default_url, markdown_location, sqlite_path


def package_version() -> str:
    """The installed distribution's version (package metadata is the one source of truth)."""
    try:
        return metadata.version("stratamem")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def hide_password(url: str) -> str:
    """A PostgreSQL URL with any password replaced by ``***`` (safe to print or paste)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def resolved_url(db: str | None) -> str:
    """The store URL the CLI would open: an absolute path for SQLite, the URL otherwise."""
    url = db or default_url()
    if is_postgres(url):
        return url
    if url.startswith(MARKDOWN_SCHEME):
        folder, _ = markdown_location(url)
        query = url.partition("?")[2]
        return MARKDOWN_SCHEME + str(Path(folder).expanduser().absolute()) + (f"?{query}" if query else "")
    path = sqlite_path(url)
    return path if path == ":memory:" else str(Path(path).expanduser().absolute())


def location(db: str | None) -> str:
    """A one-line, printable description of where the data lives."""
    url = resolved_url(db)
    if is_postgres(url):
        return f"PostgreSQL {hide_password(url)}"
    if url.startswith(MARKDOWN_SCHEME):
        return f"Markdown folder {url.removeprefix(MARKDOWN_SCHEME).partition('?')[0]}"
    return "in memory (gone when the process ends)" if url == ":memory:" else f"SQLite {url}"


def mcp_snippet(db: str | None, agent: str | None = None) -> dict[str, Any]:
    """An ``mcpServers`` entry with absolute paths: this Python, this store; no PATH lookup needed."""
    args = ["-m", "stratamem", "--db", hide_password(resolved_url(db)), "mcp"]
    if agent:
        args += ["--agent", agent]
    return {"mcpServers": {"stratamem": {"command": sys.executable, "args": args}}}


def settings_in_effect(environ: Mapping[str, str]) -> dict[str, str]:
    """Each registered ``STRATAMEM_*`` variable that is set: a secret as ``***``, a store URL without its password."""
    shown: dict[str, str] = {}
    for name in SETTINGS:
        if name in environ:
            value = environ[name]
            shown[name] = (
                "***" if name in SECRET else hide_password(value) if name == "STRATAMEM_DB" else value
            )
    return shown


def describe(db: str | None, agent: str | None = None) -> dict[str, Any]:
    """Everything ``stratamem config`` prints, as one JSON-ready mapping."""
    url = resolved_url(db)
    return {
        "version": package_version(),
        "python": sys.executable,
        "home": str(default_home().expanduser().absolute()),
        "db": hide_password(url),
        "server_token": str(token_path().expanduser().absolute()),
        "backend": "postgresql"
        if is_postgres(url)
        else "markdown"
        if url.startswith(MARKDOWN_SCHEME)
        else "sqlite",
        "extras": {name: installed(name) for name in EXTRAS},
        "env": settings_in_effect(os.environ),
        "mcp": mcp_snippet(db, agent),
    }
