"""The ``stratamem`` command line: the library's operations, one command each.

Every memory command runs in a session (a new one, or ``--session ID`` to
resume one with its persisted taint); ``--taint`` escalates it first. Output is
human-readable by default and the tools' JSON shapes with ``--json``. Exit
codes: 0 ok, 1 not found, 2 usage or validation, 3 storage, 4 policy.

The root group and its global options are in ``root``; the commands, grouped by
what they act on, register themselves on it: ``memory_commands`` (a session's
memories), ``store_commands`` (the operator's whole-store operations),
``audit_commands``, ``declassify_commands`` (the one way data moves down), ``session_commands``, ``server_commands`` (serve, mcp,
config) and ``docs_command`` (where the documentation is). Importing this package registers them all.
"""

from __future__ import annotations

# Each command module is imported for the commands it registers on ``cli``.
from . import (  # noqa: F401
    audit_commands,
    declassify_commands,
    docs_command,
    memory_commands,
    server_commands,
    session_commands,
    store_commands,
)
from .root import UNEXPECTED, accept_globals, cli

__all__ = ["UNEXPECTED", "cli", "main"]

accept_globals(cli)  # after every command is registered: each leaf takes the global options too


def main() -> None:
    cli(prog_name="stratamem")
