"""The local development token used when ``stratamem serve`` runs without a config file.

Even on loopback every request carries a token: other local users and any
web page the developer visits can reach 127.0.0.1. The token lives in
``$STRATAMEM_HOME/server-token`` readable by its owner only (mode 0600) and
is reused across restarts so clients configured once keep working, and
``stratamem.Client`` falls back to it (after ``STRATAMEM_TOKEN``) when the
server it calls is on this machine: a token file is never sent elsewhere.
"""

from __future__ import annotations

import ipaddress
import os
import stat
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ValidationError
from ..levels import Level
from ..private import make_private_dirs
from ..store import default_home
from .principals import Principal, new_token, token_digest

TOKEN_FILE = "server-token"
DEV_PRINCIPAL = "local-dev"


def token_path(home: Path | None = None) -> Path:
    return (home or default_home()) / TOKEN_FILE


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and any loopback address (``127.0.0.0/8``, ``::1``, bracketed or not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def local_token(base_url: str, home: Path | None = None) -> str | None:
    """The development token for a server at ``base_url`` on this machine, or None.

    None when the URL names another host (the token is the local user's, never
    handed to a remote server) or when no config-less server ever made one.
    """
    host = urlsplit(base_url).hostname
    if host is None or not is_loopback(host):
        return None
    return _read(token_path(home))


def _read(path: Path) -> str | None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    if stat.S_IMODE(mode) & 0o077:
        os.chmod(path, 0o600)  # someone loosened it; the token is only for its owner
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < 16:
        raise ValidationError(
            f"the development token in {path} is too short; delete the file to make a new one"
        )
    return token


def ensure_token(path: Path) -> tuple[str, bool]:
    """The development token at ``path``, creating it (mode 0600) if missing; and whether it is new."""
    token = _read(path)
    if token is not None:
        return token, False
    make_private_dirs(path.parent)
    token = new_token()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return ensure_token(path)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return token, True


def dev_principal(token: str, agent: str = "main") -> Principal:
    """The single principal of a config-less server: the local user, as ``agent``, cleared for everything.

    It is the operator (the only user there is): it may use the sessions the
    operator's own tools made (``stratamem mcp``, the CLI), reads the whole audit log
    and signs in to the console at /ui.
    """
    return Principal(
        name=DEV_PRINCIPAL,
        agent=agent,
        clearance=Level.RESTRICTED,
        operator=True,
        token_sha256=token_digest(token),
    )
