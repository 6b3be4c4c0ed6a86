"""Cutting strings without breaking characters.

Python strings are sequences of code points, but text that went through
``surrogatepass`` or a UTF-16 round trip can hold a surrogate *pair* as two
code points.  Splitting such a pair leaves a lone surrogate that most
encoders reject, so every cut in this package goes through these helpers.
"""

from __future__ import annotations

__all__ = ["ELLIPSIS", "ellipsize", "is_high_surrogate", "is_low_surrogate", "safe_cut_index"]

ELLIPSIS = "..."


def is_high_surrogate(ch: str) -> bool:
    return "\ud800" <= ch <= "\udbff"


def is_low_surrogate(ch: str) -> bool:
    return "\udc00" <= ch <= "\udfff"


def safe_cut_index(text: str, index: int, *, toward_start: bool = True) -> int:
    """Move ``index`` off the middle of a surrogate pair.

    ``toward_start`` picks the direction: a head cut moves left (dropping
    the pair), a tail cut moves right (also dropping it), so a cut never
    grows the kept text beyond its budget.
    """
    index = max(0, min(index, len(text)))
    if 0 < index < len(text) and is_high_surrogate(text[index - 1]) and is_low_surrogate(text[index]):
        return index - 1 if toward_start else index + 1
    return index


def ellipsize(text: str, max_chars: int, marker: str = ELLIPSIS) -> str:
    """Cut ``text`` to at most ``max_chars`` characters, ending with ``marker``."""
    if max_chars < 0 or len(text) <= max_chars:
        return text
    if max_chars <= len(marker):
        return text[: safe_cut_index(text, max_chars)]
    return text[: safe_cut_index(text, max_chars - len(marker))] + marker
