"""The operator's server configuration file (TOML), parsed and checked in one place.

Everything a request could otherwise try to choose — the agent, the
clearance, the peers, the policy — is fixed here by the operator. Unknown
keys are errors, so a misspelt ``clearence`` cannot silently fall back to a
default. Example::

    [server]
    host = "127.0.0.1"          # a non-loopback host needs this file
    port = 8765
    profile = "triggerfish"     # tools offered over MCP: triggerfish | zeroclaw
    # allowed_hosts = ["memory.internal:*"]   # Host headers /mcp accepts off loopback
    # graceful_timeout = 10     # seconds to finish in-flight requests on SIGTERM
    # workers = 2               # processes running the REST and MCP memory tool calls (server/tool_workers.py)
    # max_answer_chars = 50000  # the most characters one tool answer holds (budget.py; env STRATAMEM_MAX_ANSWER_CHARS)
    # idempotency_hours = 24    # how long a REST write's first answer is replayed for its Idempotency-Key
    # metrics = "auto"          # /metrics: auto (open on loopback, else an operator token) | open | operator | off
    # metrics_agents = false    # label metrics by agent name (env STRATAMEM_METRICS_AGENTS)
    # log_format = "text"       # text | json (one object per line with a request id; serve --log-format)

    [policy]
    # rules = "rules.yaml"      # operator rules (relative to this file)
    scan_mode = "reject"        # poisoning scanner: reject | quarantine | off
    read_only = false

    [compartments]              # need-to-know: defined in the store when serve or mcp starts
    # names = ["HR", "FINANCE"]

    [[principals]]
    name = "assistant"
    token_sha256 = "<sha256 hex of the token>"
    agent = "assistant"
    clearance = "CONFIDENTIAL"
    # compartments = ["HR"]     # the compartments its sessions may enter (each in [compartments] names)
    peers = ["shared"]

    [mcp]                       # defaults for `stratamem mcp` (stdio)
    agent = "assistant"
    clearance = "INTERNAL"
    # turns = true              # also offer the runtime's turn tools (as /mcp-turns)

    [turns]                     # all a turn takes: budgets, prices, recall, autosave (server/turn_config.py)
    daily_budget_usd = 5
    [turns.prices."gpt-4o"]
    input = 2.5
    output = 10

    [retention]                 # days; false keeps forever
    transcript_days = 30
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..budget import ENV_MAX_ANSWER_CHARS, check_max_answer_chars, resolve_max_answer_chars
from ..errors import ValidationError
from ..labels import compartment_name, compartment_set
from ..levels import Level
from ..policy.engine import DEFAULT_POLICY, Policy
from ..policy.scanner import ScanMode
from ..tools.specs import PROFILES, TRIGGERFISH
from ..validation import check_agent_id
from .observability import DEFAULT_METRICS, MetricsSettings, check_access, check_log_format
from .principals import Principal, Principals, token_digest
from .turn_config import TurnConfig, parse_turn_config

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_GRACEFUL_TIMEOUT_S = 10.0
MAX_WORKERS = 64
DEFAULT_IDEMPOTENCY_HOURS = 24.0
MAX_IDEMPOTENCY_HOURS = 24.0 * 365

_SECTIONS = {"server", "policy", "principals", "mcp", "turns", "retention", "compartments", "declassify"}
_SERVER_KEYS = {
    "host",
    "port",
    "profile",
    "allowed_hosts",
    "graceful_timeout",
    "log_level",
    "workers",
    "max_answer_chars",
    "idempotency_hours",
    "metrics",
    "metrics_agents",
    "log_format",
}
_POLICY_KEYS = {"rules", "scan_mode", "read_only"}
_PRINCIPAL_KEYS = {
    "name",
    "token_sha256",
    "token",
    "agent",
    "clearance",
    "compartments",
    "peers",
    "read_only",
    "operator",
}
_MCP_KEYS = {
    "agent",
    "clearance",
    "compartments",
    "peers",
    "taint",
    "session",
    "profile",
    "read_only",
    "turns",
}
_COMPARTMENTS_KEYS = {"names"}
_DECLASSIFY_KEYS = {"require_approval", "request_hours"}


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """The ``[policy]`` table: which operator rules run and how."""

    rules: Path | None = None
    scan_mode: str = ScanMode.REJECT.value
    read_only: bool = False

    def build(self) -> Policy:
        if self.rules is None and self.scan_mode == ScanMode.REJECT.value and not self.read_only:
            return DEFAULT_POLICY
        options: dict[str, Any] = {"scan_mode": self.scan_mode, "read_only": self.read_only}
        return Policy.from_file(self.rules, **options) if self.rules else Policy(**options)


@dataclass(frozen=True, slots=True)
class DeclassifySettings:
    """``[declassify]``: the two-person rule for declassification (``stratamem.declassify``) and how long a
    request may wait for its second operator."""

    require_approval: bool = False
    request_hours: float = 24.0

    def store_options(self) -> dict[str, Any]:
        """The ``Store`` keywords these settings are."""
        return {"require_approval": self.require_approval, "approval_ttl": self.request_hours * 3600.0}


def _declassify(source: Path, data: dict[str, Any]) -> DeclassifySettings:
    required = _typed(source, "declassify.require_approval", data.get("require_approval", False), bool)
    hours = _typed(source, "declassify.request_hours", data.get("request_hours", 24.0), (int, float))
    if not 0 < hours <= 24 * 366:
        raise _fail(source, "declassify.request_hours must be more than 0 and at most a year")
    return DeclassifySettings(required, float(hours))


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """A parsed configuration file (or the defaults when there is none)."""

    host: str | None = None
    port: int | None = None
    profile: str = TRIGGERFISH
    allowed_hosts: tuple[str, ...] = ()
    graceful_timeout: float = DEFAULT_GRACEFUL_TIMEOUT_S
    log_level: str = "info"
    workers: int = 1
    max_answer_chars: int | None = None  # None: STRATAMEM_MAX_ANSWER_CHARS, else the default
    idempotency_hours: float = DEFAULT_IDEMPOTENCY_HOURS
    metrics: MetricsSettings = DEFAULT_METRICS
    log_format: str = "text"
    policy: PolicySettings = PolicySettings()
    principals: tuple[Principal, ...] = ()
    compartments: tuple[str, ...] = ()  # ``[compartments] names``: defined in the store at start
    mcp: Mapping[str, Any] = field(default_factory=dict)
    turns: Mapping[str, Any] = field(default_factory=dict)  # checked here, resolved with the environment
    retention: Mapping[str, Any] = field(default_factory=dict)
    declassify: DeclassifySettings = DeclassifySettings()
    source: Path | None = None

    def answer_chars(self, env: Mapping[str, str]) -> int:
        """The tool answer budget: ``STRATAMEM_MAX_ANSWER_CHARS``, else ``[server] max_answer_chars``, else
        the default (the environment wins, as for every other server setting)."""
        if env.get(ENV_MAX_ANSWER_CHARS, "").strip():
            return resolve_max_answer_chars(None, env)
        return resolve_max_answer_chars(self.max_answer_chars, {})

    def turn_config(self, env: Mapping[str, str] | None = None) -> TurnConfig:
        """Prices, budgets and retention from this file, then ``env`` (``STRATAMEM_*``)."""
        return parse_turn_config(self.turns, self.retention, self.source, env)


def _fail(source: Path, message: str) -> ValidationError:
    return ValidationError(f"{source}: {message}")


def _table(source: Path, data: Any, name: str, allowed: set[str]) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _fail(source, f"[{name}] must be a table")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise _fail(
            source,
            f"unknown key(s) in [{name}]: {', '.join(unknown)}; valid keys are {', '.join(sorted(allowed))}",
        )
    return data


def _typed(source: Path, where: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    """``value`` if it has the type asked for (a TOML boolean is never taken for a number)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise _fail(source, f"{where} has the wrong type")
    return value


def _strings(source: Path, where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(source, f"{where} must be a list of strings")
    return tuple(value)


def _level(source: Path, where: str, value: Any) -> Level:
    try:
        return Level.parse(value)
    except ValidationError as exc:
        raise _fail(source, f"{where}: {exc.message}") from None


def _compartments(source: Path, where: str, value: Any, declared: tuple[str, ...]) -> frozenset[str]:
    """A clearance's compartments: valid names, each declared in ``[compartments] names`` (a misspelt
    name is refused at load, never a clearance that silently lacks it)."""
    try:
        names = compartment_set(_strings(source, where, value))
    except ValidationError as exc:
        raise _fail(source, f"{where}: {exc.message}") from None
    undeclared = sorted(names - set(declared))
    if undeclared:
        raise _fail(source, f"{where}: {', '.join(undeclared)} not in [compartments] names")
    return names


def _declared(source: Path, data: dict[str, Any]) -> tuple[str, ...]:
    """``[compartments] names``: canonical names in the order given (that order fixes their bits)."""
    names = _strings(source, "compartments.names", data.get("names", []))
    try:
        return tuple(dict.fromkeys(compartment_name(n) for n in names))
    except ValidationError as exc:
        raise _fail(source, f"compartments.names: {exc.message}") from None


def _profile(source: Path, where: str, value: Any) -> str:
    if value not in PROFILES:
        raise _fail(source, f"{where} must be one of {', '.join(PROFILES)}")
    return str(value)


def _principal(source: Path, index: int, data: Any, declared: tuple[str, ...]) -> Principal:
    where = f"principals[{index}]"
    entry = _table(source, data, where, _PRINCIPAL_KEYS)
    for required in ("agent", "clearance"):
        if required not in entry:
            raise _fail(source, f"{where} needs {required!r}")
    if ("token" in entry) == ("token_sha256" in entry):
        raise _fail(source, f"{where} needs exactly one of 'token_sha256' (preferred) or 'token'")
    if "token" in entry:
        token = _typed(source, f"{where}.token", entry["token"], str)
        if len(token) < 16:
            raise _fail(source, f"{where}.token must be at least 16 characters")
        digest = token_digest(token)
    else:
        digest = _typed(source, f"{where}.token_sha256", entry["token_sha256"], str).strip().lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise _fail(source, f"{where}.token_sha256 must be 64 hex digits")
    try:
        agent = check_agent_id(entry["agent"])
        peers = tuple(
            dict.fromkeys(
                check_agent_id(p) for p in _strings(source, f"{where}.peers", entry.get("peers", []))
            )
        )
    except ValidationError as exc:
        raise _fail(source, f"{where}: {exc.message}") from None
    return Principal(
        name=_typed(source, f"{where}.name", entry.get("name", agent), str),
        agent=agent,
        clearance=_level(source, f"{where}.clearance", entry["clearance"]),
        compartments=_compartments(source, f"{where}.compartments", entry.get("compartments", []), declared),
        peers=peers,
        read_only=_typed(source, f"{where}.read_only", entry.get("read_only", False), bool),
        operator=_typed(source, f"{where}.operator", entry.get("operator", False), bool),
        token_sha256=digest,
    )


def _policy(source: Path, data: dict[str, Any]) -> PolicySettings:
    rules = data.get("rules")
    if rules is not None:
        rules_path = Path(_typed(source, "policy.rules", rules, str))
        rules = rules_path if rules_path.is_absolute() else source.parent / rules_path
    scan_mode = _typed(source, "policy.scan_mode", data.get("scan_mode", ScanMode.REJECT.value), str)
    try:
        ScanMode.parse(scan_mode)
    except ValidationError:
        raise _fail(
            source, f"policy.scan_mode must be one of {', '.join(m.value for m in ScanMode)}"
        ) from None
    return PolicySettings(
        rules, scan_mode, _typed(source, "policy.read_only", data.get("read_only", False), bool)
    )


def _mcp(source: Path, data: dict[str, Any], declared: tuple[str, ...]) -> dict[str, Any]:
    """The ``[mcp]`` table checked (values stay as written; ``stdio.resolve_settings`` merges them)."""
    if "compartments" in data:
        _compartments(source, "mcp.compartments", data["compartments"], declared)
    for name in ("agent", "session"):
        if name in data:
            _typed(source, f"mcp.{name}", data[name], str)
    for name in ("clearance", "taint"):
        if name in data:
            _level(source, f"mcp.{name}", data[name])
    if "peers" in data:
        _strings(source, "mcp.peers", data["peers"])
    for name in ("read_only", "turns"):
        if name in data:
            _typed(source, f"mcp.{name}", data[name], bool)
    if "profile" in data:
        _profile(source, "mcp.profile", data["profile"])
    return data


def parse_config(text: str, source: Path) -> ServerConfig:
    """Parse and check a configuration document; ``source`` names it in errors and anchors relative paths."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(source, f"not valid TOML: {exc}") from None
    unknown = sorted(set(data) - _SECTIONS)
    if unknown:
        raise _fail(
            source,
            f"unknown section(s): {', '.join(unknown)}; valid sections are {', '.join(sorted(_SECTIONS))}",
        )
    server = _table(source, data.get("server"), "server", _SERVER_KEYS)
    principals_data = data.get("principals", [])
    if not isinstance(principals_data, list):
        raise _fail(source, "principals must be an array of tables ([[principals]])")
    declared = _declared(source, _table(source, data.get("compartments"), "compartments", _COMPARTMENTS_KEYS))
    principals = tuple(_principal(source, i, p, declared) for i, p in enumerate(principals_data))
    if principals:
        try:
            Principals(principals)  # uniqueness checks
        except ValidationError as exc:
            raise _fail(source, exc.message) from None
    port = server.get("port")
    if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535):
        raise _fail(source, "server.port must be an integer 0..65535")
    timeout = server.get("graceful_timeout", DEFAULT_GRACEFUL_TIMEOUT_S)
    _typed(source, "server.graceful_timeout", timeout, (int, float))
    workers = _typed(source, "server.workers", server.get("workers", 1), int)
    if not 1 <= workers <= MAX_WORKERS:
        raise _fail(source, f"server.workers must be from 1 to {MAX_WORKERS}")
    answer_chars = server.get("max_answer_chars")
    if answer_chars is not None:
        try:
            check_max_answer_chars(answer_chars, "server.max_answer_chars")
        except ValidationError as exc:
            raise _fail(source, exc.message) from None
    idempotency = _typed(
        source,
        "server.idempotency_hours",
        server.get("idempotency_hours", DEFAULT_IDEMPOTENCY_HOURS),
        (int, float),
    )
    if not 0 < idempotency <= MAX_IDEMPOTENCY_HOURS:
        raise _fail(
            source, f"server.idempotency_hours must be more than 0 and at most {MAX_IDEMPOTENCY_HOURS:g}"
        )
    agents = _typed(source, "server.metrics_agents", server.get("metrics_agents", False), bool)
    try:
        metrics = MetricsSettings(check_access(server.get("metrics", "auto"), "server.metrics"), agents)
        log_format = check_log_format(server.get("log_format", "text"), "server.log_format")
    except ValidationError as exc:
        raise _fail(source, exc.message) from None
    mcp = _mcp(source, _table(source, data.get("mcp"), "mcp", _MCP_KEYS), declared)
    turns, retention = data.get("turns", {}), data.get("retention", {})
    if not isinstance(turns, dict) or not isinstance(retention, dict):
        raise _fail(source, "[turns] and [retention] must be tables")
    parse_turn_config(turns, retention, source)  # refused at load time, before anything starts
    return ServerConfig(
        host=_typed(source, "server.host", server["host"], str) if "host" in server else None,
        port=port,
        profile=_profile(source, "server.profile", server.get("profile", TRIGGERFISH)),
        allowed_hosts=_strings(source, "server.allowed_hosts", server.get("allowed_hosts", [])),
        graceful_timeout=float(timeout),
        log_level=_typed(source, "server.log_level", server.get("log_level", "info"), str),
        workers=workers,
        max_answer_chars=answer_chars,
        idempotency_hours=float(idempotency),
        metrics=metrics,
        log_format=log_format,
        policy=_policy(source, _table(source, data.get("policy"), "policy", _POLICY_KEYS)),
        principals=principals,
        compartments=declared,
        mcp=mcp,
        turns=turns,
        retention=retention,
        declassify=_declassify(
            source, _table(source, data.get("declassify"), "declassify", _DECLASSIFY_KEYS)
        ),
        source=source,
    )


def load_config(path: str | Path) -> ServerConfig:
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"cannot read config file {source}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        line = source.read_bytes()[: exc.start].count(b"\n") + 1
        raise ValidationError(f"{source}: not UTF-8 (an invalid byte on line {line})") from None
    return parse_config(text, source)
