"""Principals, the config file, the development token, and what `serve` refuses."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner
from server_support import PRINCIPALS, token, write_config

import stratamem as sm
from stratamem.cli import cli
from stratamem.server.config import load_config, parse_config
from stratamem.server.devtoken import ensure_token
from stratamem.server.principals import Principal, Principals, token_digest
from stratamem.storage.records import SessionRecord


def _record(agent="alice", clearance=sm.Level.INTERNAL, peers=(), owner="a") -> SessionRecord:
    return SessionRecord("s", agent, clearance, tuple(peers), sm.Level.PUBLIC, datetime.now(UTC), owner)


def test_tokens_resolve_to_their_principal_only(tmp_path):
    config = load_config(write_config(tmp_path))
    principals = Principals(config.principals)
    for name in PRINCIPALS:
        assert principals.authenticate(token(name)).name == name
    for wrong in (None, "", "alice", token("alice") + "x", token("alice").upper()):
        assert principals.authenticate(wrong) is None
    assert all(len(p.token_sha256) == 64 and token(p.name) not in repr(p) for p in principals)


def test_a_principal_uses_only_sessions_within_its_rights():
    alice = Principal(
        "a", "alice", sm.Level.CONFIDENTIAL, peers=("shared",), token_sha256=token_digest("x" * 20)
    )
    assert alice.may_use(_record())
    assert alice.may_use(_record(clearance=sm.Level.CONFIDENTIAL, peers=("shared",)))
    assert not alice.may_use(_record(agent="bob"))
    assert not alice.may_use(_record(clearance=sm.Level.RESTRICTED))
    assert not alice.may_use(_record(peers=("bob",)))
    assert not alice.may_use(_record(owner="another-token-of-alice"))  # sessions belong to their creator
    assert not alice.may_use(_record(owner=None))  # the operator's own sessions (CLI, stdio)
    operator = Principal(
        "ops", "alice", sm.Level.CONFIDENTIAL, operator=True, token_sha256=token_digest("y" * 20)
    )
    assert operator.may_use(_record(owner="a")) and operator.may_use(_record(owner=None))
    assert not operator.may_use(_record(owner="a", agent="bob"))


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[principals]]\nagent = "a"\nclearance = "PUBLIC"\n', "exactly one of"),
        ('[[principals]]\ntoken = "short"\nagent = "a"\nclearance = "PUBLIC"\n', "at least 16"),
        ('[[principals]]\ntoken_sha256 = "abc"\nagent = "a"\nclearance = "PUBLIC"\n', "64 hex"),
        ('[[principals]]\ntoken = "0123456789abcdef"\nagent = "a"\nclearance = "SECRET"\n', "valid levels"),
        ('[[principals]]\ntoken = "0123456789abcdef"\nagent = "a"\nclearence = "PUBLIC"\n', "unknown key"),
        (
            (
                '[[principals]]\ntoken = "0123456789abcdef"\nagent = "a"\nclearance = "PUBLIC"\n'
                '[[principals]]\ntoken = "0123456789abcdef"\nagent = "b"\nclearance = "PUBLIC"\n'
            ),
            "share one token",
        ),
        ('[server]\nport = "80"\n', "port"),
        ('[server]\nprofile = "other"\n', "profile"),
        ('[policy]\nscan_mode = "maybe"\n', "scan_mode"),
        ("[servre]\n", "unknown section"),
        ('[mcp]\npeers = "bob"\n', "mcp.peers"),
        ('[mcp]\ntaint = "HIGH"\n', "mcp.taint"),
        ("not toml = = =", "not valid TOML"),
    ],
)
def test_config_mistakes_are_named(tmp_path, text, message):
    with pytest.raises(sm.ValidationError, match=message):
        parse_config(text, tmp_path / "bad.toml")


def test_config_reads_server_policy_and_plain_tokens(tmp_path):
    (tmp_path / "rules.yaml").write_text("rules: []\n")
    config = parse_config(
        '[server]\nhost = "0.0.0.0"\nport = 9000\nprofile = "zeroclaw"\nallowed_hosts = ["mem.internal:*"]\n'
        '[policy]\nrules = "rules.yaml"\nscan_mode = "quarantine"\n'
        '[[principals]]\ntoken = "0123456789abcdef"\nagent = "a"\nclearance = "internal"\npeers = ["b"]\n',
        tmp_path / "ok.toml",
    )
    assert (config.host, config.port, config.profile) == ("0.0.0.0", 9000, "zeroclaw")
    assert config.policy.rules == tmp_path / "rules.yaml"
    assert config.policy.build().scan_mode.value == "quarantine"
    principal = config.principals[0]
    assert (principal.name, principal.clearance, principal.peers) == ("a", sm.Level.INTERNAL, ("b",))
    assert principal.token_sha256 == token_digest("0123456789abcdef")


def test_development_token_is_private_and_reused(tmp_path):
    path = tmp_path / "home" / "server-token"
    first, created = ensure_token(path)
    assert created and stat.S_IMODE(path.stat().st_mode) == 0o600 and len(first) >= 32
    os.chmod(path, 0o644)
    again, created = ensure_token(path)
    assert (again, created) == (first, False)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # loosened permissions are tightened again


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.com"])
def test_serve_without_config_refuses_non_loopback_hosts(tmp_path, host, monkeypatch):
    monkeypatch.setenv("STRATAMEM_HOME", str(tmp_path))
    monkeypatch.delenv("STRATAMEM_CONFIG", raising=False)
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "m.db"), "serve", "--host", host])
    assert result.exit_code == 2
    assert "without a config file" in result.output
    assert not (tmp_path / "server-token").exists()


def test_serve_with_a_config_without_principals_refuses(tmp_path, monkeypatch):
    config = tmp_path / "empty.toml"
    config.write_text("[server]\nport = 9\n")
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "m.db"), "serve", "--config", str(config)])
    assert result.exit_code == 2 and "no [[principals]]" in result.output


def test_serve_reports_a_port_in_use_as_a_usage_error(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            cli,
            [
                "--db",
                str(tmp_path / "m.db"),
                "serve",
                "--port",
                str(port),
                "--config",
                str(write_config(tmp_path)),
            ],
        )
    assert result.exit_code == 2 and "cannot listen" in result.output
    assert "--port" in result.output and "in use" in result.output
    # checked before anything else is said: no banner, no database line, no uvicorn start-up
    assert "stratamem serve:" not in result.output and "startup complete" not in result.output.lower()
    assert not (tmp_path / "m.db").exists()
