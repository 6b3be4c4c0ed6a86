"""The one JSON reader of everything stratamem is handed: request bodies, MCP messages, imports, cursors.

Python's parser is lenient where a store must not be: it keeps the last of two values for a repeated
key (an import, a save or a tool call would lose the other without saying so), reads ``NaN``,
``Infinity`` and ``1e999`` as numbers no JSON peer can represent, passes lone surrogates (``"\\ud800"``)
that cannot be stored as UTF-8, and recurses until the interpreter's limit. Every surface reads with
``read_json`` so the same text is refused the same way everywhere, with one message shape naming the
position: ``not valid JSON at line L column C: <reason>`` (a ``ValidationError``, VALIDATION_ERROR).
Each surface only prefixes where the text came from (the request body, a file, an MCP message).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from .errors import ValidationError

MAX_DEPTH = 64  # arrays and objects inside each other; stratamem's own shapes need fewer than 8
MAX_BYTES = 64 * 1024 * 1024  # the largest body or file any surface accepts (a batch, an import file)

# A JSON string, or a run of characters outside strings and punctuation (a number or a literal).
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[^\s"{}\[\],:]+', re.DOTALL)
_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
# An escape that may decode to a lone surrogate (a pair decodes to one character and is fine).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# A surrogate character in text handed over as str: an undecodable byte (``surrogateescape``).
_RAW_SURROGATE = re.compile("[\ud800-\udfff]")
_CONSTANTS = frozenset({"NaN", "Infinity", "-Infinity"})


class JsonRefused(ValidationError):
    """Text the reader refuses; ``lineno``/``colno`` (1-based, 0 when unknown) locate the problem."""

    def __init__(self, reason: str, lineno: int = 0, colno: int = 0) -> None:
        where = f" at line {lineno} column {colno}" if lineno else ""
        super().__init__(f"not valid JSON{where}: {reason}")
        self.reason, self.lineno, self.colno = reason, lineno, colno

    def located(self, source: str) -> ValidationError:
        """The same refusal, naming where the text came from (``request body: not valid JSON at ...``)."""
        return ValidationError(f"{source}: {self.message}")


class DuplicateKey(JsonRefused):
    """An object names ``key`` twice; the position is the second occurrence."""

    def __init__(self, key: str, lineno: int = 0, colno: int = 0) -> None:
        super().__init__(f"duplicate key {key!r}", lineno, colno)
        self.key = key


class _NotFinite(ValueError):
    """Raised inside the parser's hooks; located afterwards."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def _constant(name: str) -> float:
    raise _NotFinite(name)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def _position(text: str, index: int, first_line: int) -> tuple[int, int]:
    return text.count("\n", 0, index) + first_line, index - text.rfind("\n", 0, index)


def _string_end(text: str, start: int) -> int:
    """The index just past the JSON string that opens at ``start``."""
    i = start + 1
    while text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _locate_duplicate(text: str, first_line: int) -> DuplicateKey | None:
    """Where the first repeated key is, in JSON that parses otherwise (only on the error path).

    A plain scan: objects on a stack with the keys seen so far; a string right after ``{`` or an
    object's ``,`` is a key.
    """
    objects: list[set[str] | None] = []  # None: an array
    expect_key, i = False, 0
    while i < len(text):
        char = text[i]
        if char == '"':
            end = _string_end(text, i)
            keys = objects[-1] if objects else None
            if expect_key and keys is not None:
                key = json.loads(text[i:end])
                if key in keys:
                    return DuplicateKey(key, *_position(text, i, first_line))
                keys.add(key)
                expect_key = False
            i = end
            continue
        if char in "{[":
            objects.append(set() if char == "{" else None)
            expect_key = char == "{"
        elif char in "}]" and objects:
            objects.pop()
        elif char == ",":
            expect_key = bool(objects) and objects[-1] is not None
        i += 1
    return None


def _locate(text: str, first_line: int, bad: Callable[[str], bool], reason: str) -> JsonRefused:
    """The first token outside or as a string for which ``bad`` holds, as a refusal (error path only)."""
    for match in _TOKEN.finditer(text):
        if bad(match.group()):
            return JsonRefused(reason, *_position(text, match.start(), first_line))
    return JsonRefused(reason)


def _not_finite(token: str) -> bool:
    if token.startswith('"'):
        return False
    if token in _CONSTANTS:
        return True
    try:
        return not math.isfinite(float(token))
    except ValueError:
        return False


def _lone_surrogate(token: str) -> bool:
    if not token.startswith('"'):
        return False
    try:
        json.loads(token).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return True
    return False


def _too_deep(text: str, first_line: int) -> JsonRefused:
    depth = 0
    for match in _BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return JsonRefused(
                    f"nested deeper than {MAX_DEPTH} levels", *_position(text, match.start(), first_line)
                )
        elif token in "]}":
            depth -= 1
    return JsonRefused(f"nested deeper than {MAX_DEPTH} levels")


def _check_tree(value: Any, strings: bool) -> str | None:
    """What is wrong with a parsed value (too deep; a lone surrogate when ``strings``), or None."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth >= MAX_DEPTH:
                return "depth"
            if strings and not all(_encodable(key) for key in item):
                return "surrogate"
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            if depth >= MAX_DEPTH:
                return "depth"
            stack.extend((child, depth + 1) for child in item)
        elif strings and isinstance(item, str) and not _encodable(item):
            return "surrogate"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _decode(data: bytes, first_line: int) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        column = len(data[start : exc.start].decode("utf-8", "replace")) + 1
        line = data.count(b"\n", 0, exc.start) + first_line
        raise JsonRefused(f"not valid UTF-8 (byte {exc.start})", line, column) from None


def read_json(data: str | bytes, *, max_bytes: int = MAX_BYTES, first_line: int = 1) -> Any:
    """``data`` parsed, or ``JsonRefused`` (a ValidationError) saying what and where.

    Refused: invalid UTF-8 (bytes; a leading BOM is allowed), anything over ``max_bytes``, a key
    repeated in any object (``DuplicateKey``), ``NaN``/``Infinity``/``-Infinity`` and numbers that
    overflow to them, lone surrogates, nesting deeper than ``MAX_DEPTH``, and every syntax error.
    ``first_line`` numbers the first line of ``data`` (a JSON Lines line names its line in the file).
    """
    size = len(data)
    if size > max_bytes:
        raise JsonRefused(f"{size} bytes; the limit is {max_bytes}")
    text = _decode(data, first_line) if isinstance(data, bytes) else data
    raw = _RAW_SURROGATE.search(text)
    if raw is not None:
        raise JsonRefused("not valid UTF-8", *_position(text, raw.start(), first_line))
    try:
        value = json.loads(
            text, object_pairs_hook=_unique_keys, parse_constant=_constant, parse_float=_finite
        )
    except DuplicateKey as exc:
        raise _locate_duplicate(text, first_line) or exc from None
    except _NotFinite:
        raise _locate(text, first_line, _not_finite, "NaN and infinite numbers are not JSON") from None
    except json.JSONDecodeError as exc:
        line = exc.lineno + first_line - 1
        raise JsonRefused(exc.msg, line, exc.colno) from None
    except RecursionError:
        raise _too_deep(text, first_line) from None
    except ValueError:  # an integer over Python's digit limit for conversion
        raise JsonRefused("an integer has too many digits") from None
    problem = _check_tree(value, strings=_SURROGATE_ESCAPE.search(text) is not None)
    if problem == "depth":
        raise _too_deep(text, first_line)
    if problem == "surrogate":
        raise _locate(text, first_line, _lone_surrogate, "a lone surrogate cannot be stored as UTF-8")
    return value


def read_object(data: str | bytes, *, max_bytes: int = MAX_BYTES, first_line: int = 1) -> dict[str, Any]:
    """``read_json`` of a document that must be one JSON object."""
    value = read_json(data, max_bytes=max_bytes, first_line=first_line)
    if not isinstance(value, dict):
        raise JsonRefused("the document must be a JSON object")
    return value
