"""Storage backends behind one small protocol (``base.Backend``)."""

from .protocol import Backend
from .records import MemoryDraft, SessionRecord

__all__ = ["Backend", "MemoryDraft", "SessionRecord"]
