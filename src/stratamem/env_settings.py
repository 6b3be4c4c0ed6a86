"""Every ``STRATAMEM_*`` environment variable stratamem reads, in one registry.

``stratamem config`` prints the ones in effect from this table, and code that
builds a name from a setting (``env_name("profile")``) is refused here for a
name the table lacks, so the list a user sees cannot fall behind what the code
reads. ``tests/test_env_settings.py`` also scans ``src/`` for every
``STRATAMEM_`` name written out and fails on one missing here.
"""

from __future__ import annotations

PREFIX = "STRATAMEM_"

#: variable -> what it sets
SETTINGS: dict[str, str] = {
    "STRATAMEM_HOME": "the data folder (default store, development token)",
    "STRATAMEM_DB": "the store URL (--db)",
    "STRATAMEM_CONFIG": "the server's TOML config file (--config)",
    "STRATAMEM_SESSION": "open or resume this session id (--session)",
    "STRATAMEM_AGENT": "stratamem mcp: the agent id",
    "STRATAMEM_CLEARANCE": "stratamem mcp: the highest level the session may reach",
    "STRATAMEM_PEERS": "stratamem mcp: agents whose memories may be read (comma-separated)",
    "STRATAMEM_TAINT": "stratamem mcp: the starting taint",
    "STRATAMEM_PROFILE": "stratamem mcp: the tool profile",
    "STRATAMEM_READ_ONLY": "stratamem mcp: refuse every write",
    "STRATAMEM_TURNS": "stratamem mcp: also serve the runtime's turn tools",
    "STRATAMEM_SEARCH_MODE": "the ranking of searches (default: the store's mode)",
    "STRATAMEM_MAX_ANSWER_CHARS": "the most characters one tool answer holds",
    "STRATAMEM_PRICES": "turn model prices (JSON; replaces [turns] prices)",
    "STRATAMEM_DAILY_BUDGET_USD": "turn spending budget per day",
    "STRATAMEM_MONTHLY_BUDGET_USD": "turn spending budget per month",
    "STRATAMEM_TRANSCRIPT_DAYS": "retention of transcripts (days or never)",
    "STRATAMEM_AUTOSAVE_TTL_DAYS": "retention of autosaved memories (days or never)",
    "STRATAMEM_LEDGER_DAYS": "retention of the usage ledger (days or never)",
    "STRATAMEM_TOKEN": "the HTTP client's bearer token",
    "STRATAMEM_METRICS_AGENTS": "stratamem serve: label /metrics by agent name (true/false)",
}

#: values never printed, only that they are set
SECRET = frozenset({"STRATAMEM_TOKEN"})


def env_name(setting: str) -> str:
    """``STRATAMEM_<SETTING>`` for a registered setting; an unregistered one is a programming error."""
    name = PREFIX + setting.upper()
    if name not in SETTINGS:
        raise KeyError(f"{name} is read but not listed in stratamem.env_settings.SETTINGS")
    return name
