"""The root of the ``stratamem`` command: its global options, the context every command reads them from,
and the one mapping of errors to the contract's exit codes and output shapes.

The global options are the root group's (``stratamem --json list``) and, through ``accept_globals``, every
leaf command's too (``stratamem list --json``); the later one wins.
"""

from __future__ import annotations

import functools
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from .. import __version__, shapes
from ..errors import NotFound, StorageError, StratamemError, ValidationError
from ..labels import compartment_set
from ..levels import Level
from ..policy.redact import redact_secrets
from ..session import Session
from ..storage.records import ONE_SHOT_PREFIX
from ..store import Store, default_url, missing_store
from ..validation import check_id

UNEXPECTED = "unexpected internal failure"


@dataclass
class Context:
    db: str | None
    agent: str | None
    taint: str | None
    session_id: str | None
    as_json: bool
    compartments: tuple[str, ...] = ()  # --compartment: cleared for (a new session) and entered
    _store: Store | None = None

    def store(self, existing: bool = False) -> Store:
        """The store of --db; ``existing``: a command that only reads refuses a store that is not there
        (opening creates one, so a mistyped path would read as an empty store)."""
        if self._store is None:
            url = self.db or default_url()
            absent = missing_store(url) if existing else None
            if absent is not None:
                raise ValidationError(
                    f"no store at {absent}: this command only reads and never creates one "
                    "(check --db / STRATAMEM_DB; a write command or serve creates it)"
                )
            self._store = Store(url)
        return self._store

    def session(self, existing: bool = False) -> Session:
        """The named session of --session (opened, or resumed with its taint and limits), else one for this
        command alone, its id marked one-shot so the console can hide it."""
        store = self.store(existing)
        # A resume keeps the session's own clearance and peers (never the CLI's defaults), and its agent
        # when --agent is not given.
        agent = self.agent
        if self.session_id is not None:
            check_id(self.session_id, "session id")  # before the lookup below reaches the store
        if agent is None and self.session_id:
            try:
                agent = store.backend.session_record(self.session_id).agent_id
            except NotFound:
                agent = None
        session_id = self.session_id or f"{ONE_SHOT_PREFIX}{uuid.uuid4()}"
        named = compartment_set(self.compartments)
        # A new session is cleared for the --compartment names; a resumed one keeps its clearance and may
        # only enter what it already includes (anything else: POLICY_BLOCKED, as a level above it).
        cleared = named if named and not _exists(store, self.session_id) else None
        # an explicit --agent "" is refused by validation, never silently taken as "main"
        s = store.session("main" if agent is None else agent, session_id=session_id, compartments=cleared)
        if self.taint:
            s.escalate(Level.parse(self.taint), "command line --taint", source="cli")
        for name in sorted(named):
            s.enter(name, "command line --compartment", source="cli")
        return s

    def emit(self, shape: Any, human: str) -> None:
        click.echo(shapes.dumps(shape) if self.as_json else shapes.printable(human))


def _exists(store: Store, session_id: str | None) -> bool:
    if session_id is None:
        return False
    try:
        store.backend.session_record(session_id)
    except NotFound:
        return False
    return True


def _fail(ctx: Context, exc: StratamemError) -> None:
    if ctx.as_json:
        click.echo(shapes.dumps(shapes.error_from(exc)))
    else:
        click.echo(shapes.printable(f"error [{exc.code}]: {redact_secrets(exc.message)}"), err=True)
    sys.exit(exc.exit_code)


def run(ctx: Context, action: Callable[[], None]) -> None:
    """Map library errors to the contract's exit codes and output shapes; never a traceback."""
    try:
        action()
    except StratamemError as exc:
        _fail(ctx, exc)
    except Exception as exc:  # noqa: BLE001 - a bug must still answer in the contract's terms
        _fail(ctx, StorageError(f"{UNEXPECTED} ({type(exc).__name__})"))
    finally:
        if ctx._store is not None:
            ctx._store.close()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="stratamem", message="%(prog)s %(version)s")
@click.option(
    "--db",
    envvar="STRATAMEM_DB",
    help="Store URL: a path, sqlite:///relative.db, sqlite:////abs.db, :memory:, markdown:///dir or "
    "postgresql:// [env STRATAMEM_DB]. Read commands refuse a store that does not exist.",
)
@click.option("--agent", help="Agent id (default: main).")
@click.option("--taint", help="Raise the session's taint to this level first.")
@click.option(
    "--session",
    "session_id",
    envvar="STRATAMEM_SESSION",
    help="Open or resume this named session: its taint, clearance and peers persist between commands "
    "[env STRATAMEM_SESSION; default: a one-shot session for this command].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the tools' JSON shapes.")
@click.option(
    "--compartment",
    "compartments",
    multiple=True,
    help="Enter this compartment first (repeatable; a new session is cleared for it, a resumed one must be).",
)
@click.pass_context
def cli(
    click_ctx: click.Context,
    db: str | None,
    agent: str | None,
    taint: str | None,
    session_id: str | None,
    as_json: bool,
    compartments: tuple[str, ...],
) -> None:
    """Classified, persistent memory for AI agents."""
    click_ctx.obj = Context(db, agent, taint, session_id, as_json, compartments)


# Global options, also accepted after the command ("stratamem list --json"): name, flags, kind, help
# (kind: a value, a flag, or a repeatable value).
_GLOBALS = (
    ("db", "--db", "value", "Store URL (as before the command)."),
    ("agent", "--agent", "value", "Agent id (as before the command)."),
    ("taint", "--taint", "value", "Raise the session's taint first (as before the command)."),
    ("session_id", "--session", "value", "Open or resume this named session (as before the command)."),
    ("as_json", "--json", "flag", "Print the tools' JSON shapes (as before the command)."),
    ("compartments", "--compartment", "multiple", "Enter this compartment first (as before the command)."),
)


def accept_globals(command: click.Command) -> None:
    """Give every leaf command the global options it does not define itself; the later one wins."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_globals(sub)
        return
    taken = {flag for param in command.params for flag in getattr(param, "opts", ())}
    added = [g for g in _GLOBALS if g[1] not in taken]
    for field, flag, kind, help_text in added:
        command.params.append(
            click.Option(
                [flag, f"_global_{field}"],
                is_flag=kind == "flag",
                multiple=kind == "multiple",
                default=None,
                help=help_text,
                hidden=True,
            )
        )
    callback = command.callback
    assert callback is not None

    @functools.wraps(callback)
    def merged(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context().find_object(Context)
        for field, _flag, _kind, _help in added:
            value = kwargs.pop(f"_global_{field}", None)
            if ctx is not None and value not in (None, False, ()):
                setattr(ctx, field, value)
        return callback(*args, **kwargs)

    command.callback = merged
