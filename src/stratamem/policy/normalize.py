"""Candidate views of a text for the poisoning scanner: what the text could *mean* once decoded.

A model follows ``c u r l``, ``"cu"+"rl"``, ``Y3VybCAt...`` and ``ⅽսrl``
as readily as ``curl``, so the scanner cannot match the surface text alone.
:func:`views` returns the text folded (NFKC, format and zero-width characters
and soft hyphens removed, accents dropped, Cyrillic/Greek/Armenian look-alikes
mapped to Latin, every dash and minus sign to ``-``, every space to `` ``,
look-alike quotes, slashes, full stops, colons and bars to ASCII, case
folded), the same with soft hyphens and zero-width spaces read as the dash or
space they may stand for, repaired (quoted concatenation undone; spaced
letters, letters interleaved with one separator and split lines joined),
decoded (base64, base32, hex, URL-encoding, ``\\u``/``\\x`` escapes, HTML
entities; also inside the rot13 and reversed text; nested up to
``MAX_DEPTH``), and rot13 and reversed. The scanner matches every view.

The work is bounded so hostile input cannot blow it up: at most ``MAX_VIEWS``
views of at most ``MAX_TEXTS`` texts (the input and its decodings) per chunk,
decoded text never exceeds the input it came from, and text longer than
``CHUNK_CHARS`` is viewed chunk by chunk (chunks overlap so a payload on a
boundary is still seen whole), which keeps the cost linear in the input's
length.
"""

from __future__ import annotations

import base64
import binascii
import html
import itertools
import re
import unicodedata
from collections import deque
from collections.abc import Iterator
from urllib.parse import unquote

from .confusables import CONFUSABLES, INVISIBLE, LINE_BREAKS, PUNCTUATION, SEPARATING_INVISIBLES

__all__ = ["CHUNK_CHARS", "MAX_DEPTH", "MAX_VIEWS", "chunks", "fold", "fold_positions", "separated", "views"]

MAX_VIEWS = 24
MAX_DEPTH = 2
CHUNK_CHARS = 16 * 1024
CHUNK_OVERLAP = 1024
MAX_RUNS = 256  # encoded runs decoded per view
MAX_TEXTS = 10  # texts (the input and its decodings) viewed per chunk


class _FoldTable(dict[int, str | None]):
    """``str.translate`` table built on first sight of each code point."""

    def __missing__(self, code: int) -> str | None:
        char = chr(code)
        category = unicodedata.category(char)
        value: str | None
        if char in "\n\t":
            value = char
        elif char == "\r" or code in LINE_BREAKS:
            value = "\n"
        elif category in ("Cf", "Mn", "Me", "Cc", "Cs", "Co", "Cn") or code in INVISIBLE:
            value = None
        elif category.startswith("Z"):
            value = " "
        elif category == "Pd":  # every dash: a key or a PEM armour line written with en dashes is still one
            value = "-"
        else:
            value = PUNCTUATION.get(char) or CONFUSABLES.get(char, char)
        self[code] = value
        return value


_FOLD = _FoldTable()


def strip_invisible(text: str) -> str:
    """NFKC without format characters, combining marks and look-alikes, case kept (for decoders)."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text)).translate(_FOLD)


def fold(text: str) -> str:
    """What a reader sees: compatibility forms, invisibles, accents, look-alikes and case folded away."""
    return strip_invisible(text).casefold()


def separated(text: str) -> str:
    """``text`` with each invisible that may stand for a separator (soft hyphen, zero-width space) as it.

    :func:`fold` removes them, which joins ``cu\u00adrl`` into ``curl`` but turns ``sk\u00adproj\u00ad...``
    into ``skproj...``; the scanner and the scrubber look at both readings. Maps one character to one, so
    positions in the result are positions in ``text``.
    """
    return text.translate(SEPARATING_INVISIBLES)


_ONE_BY_ONE: dict[str, str] = {}


def fold_positions(text: str) -> tuple[str, list[int]] | None:
    """``text`` folded like :func:`strip_invisible` (case kept) character by character, with the position in
    ``text`` each folded character came from (one more entry: ``len(text)``); ``None`` when folding
    changes nothing.

    For finding spans in the folded text and masking them in the original (``credentials``). Only
    characters outside printable ASCII are looked at one by one; NFKC of a lone character may differ from
    NFKC in context (a base letter and a combining mark), which only matters for letters, never for the
    dashes, spaces and punctuation the patterns need.
    """
    pieces: list[str] = []
    origin: list[int] = []
    last = 0
    changed = False
    for match in _NOT_PRINTABLE_ASCII.finditer(text):
        start = match.start()
        pieces.append(text[last:start])
        origin.extend(range(last, start))
        char = match.group(0)
        folded = _ONE_BY_ONE.get(char)
        if folded is None:
            folded = _ONE_BY_ONE.setdefault(char, strip_invisible(char))
        changed = changed or folded != char
        pieces.append(folded)
        origin.extend([start] * len(folded))
        last = start + 1
    if not changed:
        return None
    pieces.append(text[last:])
    origin.extend(range(last, len(text) + 1))
    return "".join(pieces), origin


_NOT_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e\n\t]")


# ---------------------------------------------------------------------------- repairs

_CONCAT = re.compile(r"""(["'`])[ \t]{0,3}(?:\+|\.|\|\||&|,)?[ \t]{0,3}(["'`])""")
_EMPTY_QUOTES = re.compile(r"(?<=\w)(?:''|\"\"|\\(?=[a-z]))(?=\w)")
_SPACED = re.compile(r"(?<!\S)\S(?:[ \t]\S(?!\S))+")
_WIDE_GAP = re.compile(r"[ \t]{2,}")
# letters interleaved with one separator: "c.u.r.l", "c-u-r-l", "c/u/r/l", "c  u  r  l"
_SEPARATORS = ".-_/|,*~+·"
_INTERLEAVED = tuple(
    re.compile(rf"(?:[^\s{re.escape(sep)}]{re.escape(sep)}){{3,}}[^\s{re.escape(sep)}]?")
    for sep in _SEPARATORS
)
_INTERLEAVED_BY = dict(zip(_SEPARATORS, _INTERLEAVED, strict=True))
_SEPARATOR_SET = frozenset(_SEPARATORS)
_DOUBLE_SPACED = re.compile(r"(?<!\S)(?:\S[ \t]{2}){3,}\S?(?!\S)")
_CONTINUATION = re.compile(r"\\\n")


def _join_runs(match: re.Match[str]) -> str:
    run = match.group(0)
    return run[::2]


SHORT_LINE = 24


def join_fragments(text: str) -> str:
    """Join a line to the next without a space when both are short and not blank (a word cut into lines),
    else with one.

    Joining every line would glue a payload to the prose around it (``...base64curl``).
    """
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    out = [lines[0]]
    for previous, line in itertools.pairwise(lines):
        fragment = 0 < len(previous) <= SHORT_LINE and 0 < len(line) <= SHORT_LINE  # a blank line separates
        out.append(("" if fragment else " ") + line)
    return "".join(out)


def repair(text: str, newline: str | None) -> str:
    """Undo quoted concatenation, join spaced letters and split lines.

    Newlines become ``newline``; ``None`` joins short fragments only (:func:`join_fragments`).
    """
    text = _CONTINUATION.sub("", text)
    text = join_fragments(text) if newline is None else text.replace("\n", newline)
    text = _CONCAT.sub("", text)
    text = _EMPTY_QUOTES.sub("", text)
    text = _SPACED.sub(_join_runs, text)
    text = _DOUBLE_SPACED.sub(lambda m: m.group(0)[::3], text)
    for pattern in _INTERLEAVED:
        text = pattern.sub(_join_runs, text)
    return _WIDE_GAP.sub(" ", text)


def _repairable(text: str) -> bool:
    """Whether :func:`repair` could change ``text``; ``False`` is a proof that it returns ``text`` as is.

    Each step of ``repair`` changes nothing when its pattern does not match; every pattern needs what is
    tested here (a newline or backslash for continuations and line joins, a tab or two spaces for the gap
    patterns, a quote for concatenation and empty quotes, three separators for an interleaving), and the
    rest are searched. No step matching the text as given means no step sees anything else.
    """
    if "\n" in text or "\\" in text or "\t" in text or "  " in text:
        return True
    if any(q in text for q in "'\"`") and (_CONCAT.search(text) or _EMPTY_QUOTES.search(text)):
        return True
    if _SPACED.search(text):
        return True
    return any(
        text.count(sep) >= 3 and _INTERLEAVED_BY[sep].search(text)
        for sep in _SEPARATOR_SET.intersection(text)
    )


# ---------------------------------------------------------------------------- decoders

_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/_=-])")
_B32_RUN = re.compile(r"(?<![A-Za-z0-9=])[A-Z2-7]{16,}=*(?![A-Za-z0-9=])")
_HEX_RUN = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ :,-]?){8,}(?![0-9A-Fa-f])")
_WRAPPED_B64 = re.compile(r"(?<=[A-Za-z0-9+/=])[ \t]*\r?\n[ \t]*(?=[A-Za-z0-9+/])")
_URL_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_ESCAPE = re.compile(
    r"\\(?:u\{([0-9A-Fa-f]{1,6})\}|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|x([0-9A-Fa-f]{2})|([0-7]{3}))"
)
_ENTITY = re.compile(r"&#?[A-Za-z0-9]{1,8};")


def _readable(data: bytes) -> str | None:
    """``data`` as text if it is mostly printable UTF-8; encoded binary (images, hashes) is not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text:
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\t\r")
    return text if printable >= 0.9 * len(text) else None


def _b64(match: re.Match[str]) -> str:
    run = match.group(0).rstrip("=")
    run = run[: len(run) - (len(run) % 4 == 1)]
    padded = run + "=" * (-len(run) % 4)
    try:
        altchars = b"-_" if ("-" in run or "_" in run) else None
        text = _readable(base64.b64decode(padded, altchars=altchars, validate=True))
    except (binascii.Error, ValueError):
        return match.group(0)
    return match.group(0) if text is None else f" {text} "


def _b32(match: re.Match[str]) -> str:
    run = match.group(0).rstrip("=")
    try:
        text = _readable(base64.b32decode(run + "=" * (-len(run) % 8)))
    except (binascii.Error, ValueError):
        return match.group(0)
    return match.group(0) if text is None else f" {text} "


def _hex(match: re.Match[str]) -> str:
    digits = re.sub(r"[ :,-]", "", match.group(0))
    if len(digits) % 2:
        digits = digits[:-1]
    text = _readable(bytes.fromhex(digits))
    return match.group(0) if text is None else f" {text} "


def _escape(match: re.Match[str]) -> str:
    brace, u4, u8, x2, octal = match.groups()
    value = int(brace or u4 or u8, 16) if (brace or u4 or u8) else int(x2, 16) if x2 else int(octal, 8)
    return chr(value) if value <= 0x10FFFF else match.group(0)


def _latin1_bytes_as_utf8(text: str) -> str:
    """``\\xe2\\x80\\x8b`` escapes decode to bytes of UTF-8, not to Latin-1 letters."""
    try:
        return text.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return text


_LONG_RUN = re.compile(r"[A-Za-z0-9+/_-]{16}")  # in every base64 or base32 run
_HEX_PAIRS = re.compile(r"(?:[0-9A-Fa-f]{2}[ :,-]?){8}")  # in every hex run


def _decodable(plain: str, rotated: str) -> bool:
    """Whether :func:`decodings` could yield anything for ``plain``, its rot13 ``rotated`` or its reversal;
    ``False`` is a proof that it yields nothing for any of the three.

    Each decoder yields only when its pattern matches, and each pattern needs what is tested here: ``%``
    (URL), a backslash (escapes), ``&`` and ``;`` (entities), a newline (base64 wrapped in lines), 16
    characters of the base64 alphabet in a row (base64, base32), 8 hex pairs (hex). Rot13 and reversal keep
    those characters and runs of that alphabet (rot13 maps letters to letters), and reversal keeps a run of
    hex pairs; only rot13 makes hex digits of other letters (n-s), so hex is also searched in ``rotated``.
    """
    if "%" in plain or "\\" in plain or "\n" in plain or ("&" in plain and ";" in plain):
        return True
    return bool(_LONG_RUN.search(plain) or _HEX_PAIRS.search(plain) or _HEX_PAIRS.search(rotated))


def decodings(text: str) -> Iterator[str]:
    """``text`` with each kind of encoded run decoded in place (only kinds that changed something)."""
    wrapped = _WRAPPED_B64.sub("", text)  # base64 broken into lines (MIME, PEM) decodes as one run
    for source in (text, wrapped) if wrapped != text else (text,):
        if len(_B64_RUN.findall(source)) <= MAX_RUNS:
            decoded = _B64_RUN.sub(_b64, source)
            if decoded != source:
                yield decoded
    if len(_HEX_RUN.findall(text)) <= MAX_RUNS:
        decoded = _HEX_RUN.sub(_hex, text)
        if decoded != text:
            yield decoded
    if len(_B32_RUN.findall(text)) <= MAX_RUNS:
        decoded = _B32_RUN.sub(_b32, text)
        if decoded != text:
            yield decoded
    if _URL_ESCAPE.search(text):
        yield unquote(text, errors="replace")
    if _ESCAPE.search(text):
        decoded = _ESCAPE.sub(_escape, text)
        yield _latin1_bytes_as_utf8(decoded)
    if _ENTITY.search(text):
        yield html.unescape(text)


# ---------------------------------------------------------------------------- views


def chunks(text: str, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> Iterator[str]:
    """Overlapping slices, so the views of a long text cost time linear in its length."""
    if len(text) <= size:
        yield text
        return
    step = size - overlap
    for start in range(0, len(text) - overlap, step):
        yield text[start : start + size]


_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)


def rot13(text: str) -> str:
    """``codecs.encode(text, "rot13")`` (the same table: ASCII letters only) without the codec lookup."""
    return text.translate(_ROT13)


def views(
    text: str, *, max_views: int = MAX_VIEWS, max_depth: int = MAX_DEPTH, shortcuts: bool = True
) -> list[str]:
    """Distinct candidate readings of ``text`` (at most ``max_views``), folded first, decoded last.

    ``text`` should be at most ``CHUNK_CHARS`` long (see :func:`chunks`); every
    view is at most a small constant times as long as ``text``.

    ``shortcuts`` skips work that provably changes nothing, so ordinary text costs a few string tests
    instead of dozens of substitutions: printable ASCII is its own NFKC form with nothing invisible or
    look-alike in it; without a newline the three repairs are one (and none when :func:`_repairable` says
    so); decoders are not run on texts :func:`_decodable` shows hold nothing to decode. The list is the same
    with ``shortcuts=False`` (the full path, kept for the equivalence test).
    """
    out: list[str] = []
    seen: set[str] = set()

    def add(view: str) -> None:
        if len(out) < max_views and view and view not in seen:
            seen.add(view)
            out.append(view)

    # Breadth first over lazily decoded texts: nothing is decoded once the views are full.
    queue: deque[tuple[Iterator[str], int]] = deque([(iter((text,)), 0)])
    budget = MAX_TEXTS
    while queue and len(out) < max_views and budget > 0:
        texts, depth = queue[0]
        raw = next(texts, None)
        if raw is None:
            queue.popleft()
            continue
        budget -= 1
        plain = raw if shortcuts and raw.isascii() and raw.isprintable() else strip_invisible(raw)
        folded = plain.casefold()
        add(folded)
        if not (shortcuts and raw.isascii()) and (spelled := separated(raw)) != raw:
            add(fold(spelled))
        if shortcuts and "\n" not in folded:  # the newline argument is all that tells the three repairs apart
            joined_space = repair(folded, " ") if _repairable(folded) else folded
            add(joined_space)
        else:
            joined_space = repair(folded, " ")
            add(joined_space)
            add(repair(folded, ""))
            add(repair(folded, None))
        add(rot13(joined_space))
        add(joined_space[::-1])
        if depth < max_depth:
            # encodings of the text, and of its rot13 and reversal (case kept: base64 needs it)
            rotated = rot13(plain)
            if not shortcuts or _decodable(plain, rotated):
                sources = (plain, rotated, plain[::-1])
                queue.append((itertools.chain.from_iterable(decodings(s) for s in sources), depth + 1))
    return out
