"""What the operator chose about watching the server: who may scrape ``/metrics``, agent labels, logs.

Kept apart from ``metrics`` (which needs ``prometheus-client``) so the configuration file can be
checked by any command. ``[server]`` keys:

- ``metrics``: ``auto`` (default: open when the server listens on a loopback address, an operator
  token otherwise), ``open``, ``operator`` (always an operator token) or ``off`` (no endpoint);
- ``metrics_agents``: label metrics by agent name (default false: agent names are the operator's
  to reveal); ``STRATAMEM_METRICS_AGENTS`` overrides it;
- ``log_format``: ``text`` or ``json`` (``serve --log-format`` overrides it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..env_settings import env_name
from ..errors import ValidationError
from .devtoken import is_loopback

ACCESS_MODES = ("auto", "open", "operator", "off")
LOG_FORMATS = ("text", "json")
ENV_METRICS_AGENTS = env_name("metrics_agents")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    """Who may scrape ``/metrics`` and whether agent names become labels."""

    access: str = "auto"
    agents: bool = False

    def open_to_anyone(self, host: str) -> bool:
        return self.access == "open" or (self.access == "auto" and is_loopback(host))

    def with_env(self, env: Mapping[str, str]) -> MetricsSettings:
        """``STRATAMEM_METRICS_AGENTS`` (true/false) over the file's ``metrics_agents``."""
        raw = env.get(ENV_METRICS_AGENTS)
        if raw is None:
            return self
        value = raw.strip().lower()
        if value not in _TRUE | _FALSE:
            raise ValidationError(f"{ENV_METRICS_AGENTS} must be true or false, not {raw!r}")
        return MetricsSettings(self.access, value in _TRUE)


DEFAULT_METRICS = MetricsSettings()


def check_access(value: object, where: str) -> str:
    if value not in ACCESS_MODES:
        raise ValidationError(f"{where} must be one of {', '.join(ACCESS_MODES)}")
    return str(value)


def check_log_format(value: object, where: str) -> str:
    if value not in LOG_FORMATS:
        raise ValidationError(f"{where} must be one of {', '.join(LOG_FORMATS)}")
    return str(value)


__all__ = [
    "ACCESS_MODES",
    "DEFAULT_METRICS",
    "LOG_FORMATS",
    "MetricsSettings",
    "check_access",
    "check_log_format",
]
