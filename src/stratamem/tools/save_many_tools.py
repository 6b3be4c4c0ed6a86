"""The batch write tools: ``memory_save_many`` (triggerfish) and ``memory_store_many`` (zeroclaw).

A batch is ``policy.gated_save_many``: every item is judged by the gate as a
single write would be (scanner, the operator's rules with ``tool`` =
``memory_save``, one audited decision each), then the whole batch is one
``save_many`` transaction with one audit event per record. One bad or
refused item fails the call naming its index, and nothing is written. The
call as a whole has already passed the executor's PRE_TOOL_CALL step
(read-only, rules on the batch tool's name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import shapes
from ..policy.engine import Policy
from ..policy.gate import gated_save_many
from . import fit

if TYPE_CHECKING:
    from ..session import Session

MAX_KEYS_SHOWN = 20  # zeroclaw's answer names at most this many keys (it stays bounded)


@dataclass(frozen=True, slots=True)
class Gate:
    """What the gate needs to judge each item as the call's own write."""

    policy: Policy
    origin: str | None
    channel: str | None

    def save(self, session: Session, items: list[dict[str, Any]]) -> list[Any]:
        return gated_save_many(
            session, items, policy=self.policy, path="tool", origin=self.origin, channel=self.channel
        )


def memory_save_many(session: Session, args: dict[str, Any], gate: Gate) -> dict[str, Any]:
    stored = gate.save(session, args["items"])
    return fit.saved_many([shapes.saved(m) for m in stored], session.store.max_answer_chars)


def memory_store_many(session: Session, args: dict[str, Any], gate: Gate) -> str:
    stored = gate.save(session, args["items"])
    keys = ", ".join(m.key for m in stored[:MAX_KEYS_SHOWN])
    more = f", and {len(stored) - MAX_KEYS_SHOWN} more" if len(stored) > MAX_KEYS_SHOWN else ""
    return f"Stored {len(stored)} memories: {keys}{more}"


HANDLERS: dict[str, Callable[[Session, dict[str, Any], Gate], Any]] = {
    "memory_save_many": memory_save_many,
    "memory_store_many": memory_store_many,
}
