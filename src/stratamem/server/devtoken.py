"""The local development token used when ``stratamem serve`` runs without a config file.

Even on loopback every request carries a token: other local users and any
web page the developer visits can reach 127.0.0.1. The token lives in
``$STRATAMEM_HOME/server-token`` readable by its owner only (mode 0600) and
is reused across restarts so clients configured once keep working.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import ValidationError
from ..levels import Level
from ..private import make_private_dirs
from ..store import default_home
from .principals import Principal, new_token, token_digest

TOKEN_FILE = "server-token"
DEV_PRINCIPAL = "local-dev"


def token_path(home: Path | None = None) -> Path:
    return (home or default_home()) / TOKEN_FILE


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
