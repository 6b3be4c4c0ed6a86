"""The commands that run stratamem for other programs: ``serve`` (HTTP: MCP, REST, the console), ``mcp``
(MCP over stdio for one session) and ``config`` (this install's paths, settings and mcpServers snippet)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .. import shapes
from ..install_info import describe, location
from ..store import default_url
from .root import Context, cli, run

F = TypeVar("F", bound=Callable[..., Any])


def _config_option(help_text: str) -> Callable[[F], F]:
    """``--config``: the operator's TOML file, also from ``STRATAMEM_CONFIG``; each command says what it reads."""
    return click.option(
        "--config",
        "config_path",
        envvar="STRATAMEM_CONFIG",
        type=click.Path(exists=True, dir_okay=False),
        help=help_text,
    )


def _given(first: str | None, second: str | None) -> str | None:
    """The first option that was given at all (an empty string counts as given)."""
    return first if first is not None else second


@cli.command()
@click.option(
    "--host", help="Address to listen on (default 127.0.0.1; a non-loopback address needs --config)."
)
@click.option("--port", type=int, help="Port to listen on (default 8765).")
@_config_option("Server config (TOML): principals, policy, turn prices/budgets, retention.")
@click.option(
    "--workers",
    type=int,
    help="Processes running the memory tool calls of REST and MCP (default 1: in the server's own process; "
    "[server] workers in --config).",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    help="Log lines as text (default) or one JSON object per line with a request id "
    "([server] log_format in --config).",
)
@click.pass_obj
def serve(
    ctx: Context,
    host: str | None,
    port: int | None,
    config_path: str | None,
    workers: int | None,
    log_format: str | None,
) -> None:
    """Serve memory over HTTP: MCP at /mcp, REST at /v1, docs at /docs."""
    from ..server import require_extra, run_serve

    def action() -> None:
        require_extra()
        run_serve(
            ctx.db or default_url(),
            host=host,
            port=port,
            config_path=config_path,
            agent=ctx.agent,
            workers=workers,
            log_format=log_format,
            banner=f"stratamem: database {location(ctx.db)}",  # a JSON log line under --log-format json
        )

    run(ctx, action)


def _say_location(ctx: Context) -> None:
    """Name the database on stderr (stdout may be a protocol stream)."""
    click.echo(f"stratamem: database {location(ctx.db)}", err=True)


@cli.command("mcp")
@click.option("--agent", "mcp_agent", help="Agent id [env STRATAMEM_AGENT; default main].")
@click.option(
    "--clearance", help="Highest level the session may reach [env STRATAMEM_CLEARANCE; default RESTRICTED]."
)
@click.option(
    "--peer",
    "peers",
    multiple=True,
    help="Agent whose memories may be read (repeatable) [env STRATAMEM_PEERS].",
)
@click.option("--taint", "mcp_taint", help="Starting taint [env STRATAMEM_TAINT; default PUBLIC].")
@click.option("--session", "mcp_session", help="Open or resume this session id [env STRATAMEM_SESSION].")
@click.option(
    "--profile",
    type=click.Choice(["triggerfish", "zeroclaw", "mcp-memory"]),
    help="Tool profile [env STRATAMEM_PROFILE].",
)
@click.option(
    "--read-only", "read_only", is_flag=True, default=None, help="Offer and allow no writing tools."
)
@click.option(
    "--turns",
    "turns",
    is_flag=True,
    default=None,
    help="Also serve the runtime's turn tools (turn_begin ... transcript, as /mcp-turns) [env STRATAMEM_TURNS].",
)
@_config_option("Config file (TOML) with [mcp], [turns] and [retention] tables.")
@click.pass_obj
def mcp(
    ctx: Context,
    mcp_agent: str | None,
    clearance: str | None,
    peers: tuple[str, ...],
    mcp_taint: str | None,
    mcp_session: str | None,
    profile: str | None,
    read_only: bool | None,
    turns: bool | None,
    config_path: str | None,
) -> None:
    """Serve the memory tools over MCP stdio, for one operator-chosen session (--turns: the turn tools too)."""
    from ..server import require_extra, run_mcp

    # an explicit empty value ("--agent ''") is kept, so validation refuses it instead of defaulting
    flags = {
        "agent": _given(mcp_agent, ctx.agent),
        "clearance": clearance,
        "peers": peers,
        "taint": _given(mcp_taint, ctx.taint),
        "compartments": ctx.compartments,
        "session": _given(mcp_session, ctx.session_id),
        "profile": profile,
        "read_only": read_only,
        "turns": turns,
    }

    def action() -> None:
        require_extra()
        _say_location(ctx)
        run_mcp(ctx.db or default_url(), flags, config_path)

    run(ctx, action)


@cli.command("config")
@click.pass_obj
def config_(ctx: Context) -> None:
    """Print the resolved version, paths, settings and a ready mcpServers snippet for this install."""

    def action() -> None:
        info = describe(ctx.db, ctx.agent)
        if ctx.as_json:
            click.echo(shapes.dumps(info))
            return
        extras = ", ".join(f"{name} {'yes' if ok else 'no'}" for name, ok in info["extras"].items())
        lines = [
            f"version  {info['version']}",
            f"python   {info['python']}",
            f"home     {info['home']}",
            f"db       {info['db']} ({info['backend']})",
            f"token    {info['server_token']} (serve's development token, when it runs without --config)",
            f"extras   {extras}",
        ]
        lines += [f"env      {name}={value}" for name, value in info["env"].items()]
        lines += [
            "",
            "MCP client config (Claude Desktop and any mcpServers client):",
            json.dumps(info["mcp"], indent=2, ensure_ascii=False),
        ]
        click.echo(shapes.printable("\n".join(lines)))

    run(ctx, action)
