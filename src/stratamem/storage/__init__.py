"""Storage backends behind one small protocol (``base.Backend``)."""

from .base import Backend, MemoryDraft, SessionRecord

__all__ = ["Backend", "MemoryDraft", "SessionRecord"]
