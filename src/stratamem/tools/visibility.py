"""What the tool layer withholds from the model on top of the store's own filtering.

The store already hides everything above the taint and outside the agent's
scope. Here we only drop quarantined memories (stored by the poisoning
scanner in QUARANTINE mode): they stay in the store for the operator to
inspect, but no tool returns them.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..models import Hit, Memory
from ..policy.gate import with_quarantine
from ..policy.scanner import is_quarantined

__all__ = ["shown", "shown_hits", "with_quarantine"]


def shown(memory: Memory | None) -> Memory | None:
    return None if memory is None or is_quarantined(memory.tags) else memory


def shown_hits(hits: Iterable[Hit]) -> list[Hit]:
    return [h for h in hits if not is_quarantined(h.memory.tags)]
