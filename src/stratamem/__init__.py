"""stratamem: classified, persistent memory for AI agents.

No session reads above its taint or writes below it; see CONTRACT and README.
"""

from typing import TYPE_CHECKING

from .audit_anchor import AuditAnchor
from .errors import ClearanceError, NotFound, PolicyBlocked, StorageError, StratamemError, ValidationError
from .install_info import package_version
from .labels import Label
from .levels import Level, can_flow_to
from .models import AuditEvent, Hit, Memory, PurgeResult, TaintEvent
from .session import Session
from .store import Store, open_store

__version__ = package_version()

if TYPE_CHECKING:  # type checkers see the client's typed methods; at run time it loads on first use
    from .client import AsyncClient as AsyncClient
    from .client import Client as Client


def __getattr__(name: str) -> object:
    """``stratamem.Client`` / ``AsyncClient`` load on first use: they need the ``client`` extra (httpx)."""
    if name in ("Client", "AsyncClient"):
        import importlib

        return getattr(importlib.import_module(f"{__name__}.client"), name)
    raise AttributeError(f"module 'stratamem' has no attribute {name!r}")


__all__ = [
    "AuditAnchor",
    "AuditEvent",
    "ClearanceError",
    "Hit",
    "Label",
    "Level",
    "Memory",
    "NotFound",
    "PolicyBlocked",
    "PurgeResult",
    "Session",
    "StorageError",
    "Store",
    "StratamemError",
    "TaintEvent",
    "ValidationError",
    "__version__",
    "can_flow_to",
    "open_store",
]
