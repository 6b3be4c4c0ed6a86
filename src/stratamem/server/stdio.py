"""``stratamem mcp``: the memory tools over MCP stdio, for one operator-chosen session.

With ``--turns`` (env ``STRATAMEM_TURNS``, ``[mcp] turns = true``) the same
process also serves the runtime's turn tools (``turn_begin`` ...
``transcript``, as ``/mcp-turns`` over HTTP) for that session, with the
config file's ``[turns]`` prices and budgets and ``[retention]``. They are
off by default: they belong to the runtime, and a host that hands every
listed tool to the model should not let the model end turns or bill usage.

The agent, clearance, peers, starting taint and compartments (the session is cleared for them and
enters them at start) come from the operator —
command-line flags first, then ``STRATAMEM_*`` environment variables, then
the ``[mcp]`` table of the config file — never from the model. The process
serves exactly one stratamem session; its id is written to stderr (stdout is
the protocol) so the runtime can raise its taint out of band, e.g. through
``POST /v1/sessions/{id}/escalate`` with an operator token on a ``stratamem serve``
of the same store (the session is the operator's, not a token's),
or by naming the session up front with ``--session``.

While no tool call has arrived for a moment, an ``IdleEmbedder`` embeds the
store's pending records in the background (stopped before the store closes).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
from mcp.server.stdio import stdio_server

from ..env_settings import env_name
from ..errors import ValidationError
from ..labels import compartment_set
from ..levels import Level
from ..search.idle import IdleEmbedder
from ..session import Session
from ..store import Store
from ..tools.specs import PROFILES, TRIGGERFISH
from .config import PolicySettings, ServerConfig
from .mcp_strict import StrictLines
from .mcp_tools import Caller, ExtraTools, build_mcp_server
from .mcp_turns import stdio_turn_tools
from .turn_config import TurnConfig
from .warm import warm_up

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True, slots=True)
class StdioSettings:
    """The one session a stdio server acts in, and how."""

    agent: str = "main"
    clearance: Level | None = None  # None: RESTRICTED for a new session, the session's own on a resume
    peers: tuple[str, ...] | None = None  # None: none for a new session, the session's own on a resume
    taint: Level | None = None
    compartments: frozenset[str] = frozenset()  # cleared for and entered at start (names)
    declared: tuple[str, ...] = ()  # the config's ``[compartments] names``, defined in the store at start
    session_id: str | None = None
    profile: str = TRIGGERFISH
    read_only: bool = False
    policy: PolicySettings = field(default_factory=PolicySettings)
    turns: bool = False  # also serve the runtime's turn tools
    turn_config: TurnConfig = field(default_factory=TurnConfig)


def _flag(value: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValidationError(f"not a boolean: {value!r} (use true or false)")


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None and v != ()), None)


def _default(value: Any, default: Any) -> Any:
    """``default`` only when nothing was given: an explicit empty value is refused later, not replaced."""
    return default if value is None else value


def resolve_settings(
    flags: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    config: ServerConfig | None = None,
) -> StdioSettings:
    """Merge flags > environment > config file > defaults into checked settings.

    ``flags`` holds ``agent``, ``clearance``, ``peers`` (tuple), ``taint``,
    ``compartments`` (tuple), ``session``, ``profile`` and ``read_only``; ``None``
    or ``()`` means not given.
    """
    env = os.environ if env is None else env
    table = dict(config.mcp) if config is not None else {}

    def pick(name: str) -> Any:
        raw_env = env.get(env_name(name))
        return _first(flags.get(name), raw_env if raw_env else None, table.get(name))

    peers = tuple(flags.get("peers") or ()) or None
    if peers is None and env.get(env_name("peers")):
        peers = tuple(p.strip() for p in env[env_name("peers")].split(",") if p.strip())
    if peers is None and "peers" in table:
        peers = tuple(table["peers"])
    read_only = flags.get("read_only")
    if read_only is None and env.get(env_name("read_only")):
        read_only = _flag(env[env_name("read_only")])
    if read_only is None:
        read_only = bool(table.get("read_only", False))
    turns = flags.get("turns")
    if turns is None and env.get(env_name("turns")):
        turns = _flag(env[env_name("turns")])
    if turns is None:
        turns = bool(table.get("turns", False))
    profile = pick("profile") or TRIGGERFISH
    if profile not in PROFILES:
        raise ValidationError(f"unknown profile {profile!r}; valid profiles are {', '.join(PROFILES)}")
    taint = pick("taint")
    clearance = pick("clearance")
    compartments = tuple(flags.get("compartments") or ()) or tuple(table.get("compartments", ()))
    return StdioSettings(
        agent=_default(pick("agent"), "main"),
        clearance=Level.parse(clearance) if clearance is not None else None,
        peers=peers,
        taint=Level.parse(taint) if taint is not None else None,
        compartments=compartment_set(compartments),
        declared=config.compartments if config is not None else (),
        session_id=pick("session"),
        profile=profile,
        read_only=read_only,
        policy=config.policy if config is not None else PolicySettings(),
        turns=turns,
        turn_config=(config if config is not None else ServerConfig()).turn_config(env),
    )


def open_stdio_session(store: Store, settings: StdioSettings) -> Session:
    """The session the server will act in, at its starting taint (refused above the clearance).

    Resuming (``--session ID``) keeps the clearance and peers the session was
    created with; naming different ones is refused (``ClearanceError``, exit 4).
    The config's compartments are defined first, then the session enters its own.
    """
    if settings.declared:
        store.define_compartments(*settings.declared)
    session = store.session(
        settings.agent,
        settings.session_id,
        settings.clearance,
        settings.peers,
        compartments=settings.compartments or None,
    )
    if settings.taint is not None:
        session.escalate(settings.taint, "starting taint set by the operator", source="stratamem mcp")
    for name in sorted(settings.compartments):
        session.enter(name, "compartment entered by the operator", source="stratamem mcp")
    return session


async def _serve(caller: Caller, extra: ExtraTools | None, idle: IdleEmbedder) -> None:
    async def resolve(ctx: Any) -> Caller:
        return caller  # one process, one session: the operator's

    server = build_mcp_server(resolve, extra, profile=caller.profile, read_only=caller.policy.read_only)
    # every message through the strict JSON reader first; each one keeps background embedding waiting
    lines = StrictLines(sys.stdin.buffer, on_line=idle.touch)
    async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
        lines.answer_to(write_stream)
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(db: str, settings: StdioSettings) -> None:
    """Serve MCP on stdin/stdout until the client closes the pipe."""
    store = Store(db, retention=settings.turn_config.retention)
    idle = IdleEmbedder(store.semantic)
    try:
        session = open_stdio_session(store, settings)
        policy = settings.policy.build()
        if settings.read_only and not policy.read_only:
            policy = policy.replace(read_only=True)
        record = session.record
        print(
            f"stratamem mcp: session {record.id} agent={record.agent_id} taint={session.label.name} "
            f"clearance={session.clearance_label.name} profile={settings.profile}"
            + (" turns=on" if settings.turns else ""),
            file=sys.stderr,
            flush=True,
        )
        caller = Caller(session=lambda: session, policy=policy, profile=settings.profile, origin="mcp-stdio")
        extra = stdio_turn_tools(session, policy, settings.turn_config.settings) if settings.turns else None
        warm_up(store)  # the client's first tool call does not wait for the scrubber or the model
        idle.start()
        anyio.run(_serve, caller, extra, idle)
    finally:
        idle.stop()
        store.close()
