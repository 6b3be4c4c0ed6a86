"""Fitting a tool's answer into the store's character budget (``stratamem.budget``).

An answer that fits is returned exactly as before. One that does not keeps
its leading entries (memories, results, lines, entities with their relations)
while they fit, marks the answer as cut and gives the cursor that continues
after the last entry shown. When even the first entry is over the budget on
its own it is kept, shrunk: its content cut with a marker, or, for a graph
entity, its later observations left out and counted.

Sizes are measured on the encoded text (JSON escapes counted), and strings are
cut before encoding, so the answer stays valid JSON in the shapes of
``stratamem.shapes`` with only ``truncated`` and ``next_cursor`` added.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, TypeVar

from .. import shapes
from ..models import Hit, Memory
from ..paging import encode_cursor, encode_offset
from ..turn.textcut import safe_cut_index

T = TypeVar("T")
_SHORT_ESCAPES = frozenset('"\\\n\r\t\b\f')
SEP = 2  # ", " between the elements of a JSON list
MORE_PREFIX = "more: use cursor="
QUERY_SHARE = 10  # a cut answer echoes at most 1/10 of the budget of its query
OMITTED = "omittedObservations"  # on a graph entity shown without some of its observations


def _escaped(ch: str) -> int:
    """Characters ``ch`` takes inside a JSON string written with ``ensure_ascii=False``."""
    if ch in _SHORT_ESCAPES:
        return 2
    return 6 if ch < " " else 1


def escaped_length(text: str) -> int:
    """The length of ``text`` inside a JSON string (without the quotes)."""
    return sum(map(_escaped, text))


def cut_marker(dropped: int) -> str:
    return f" [... {dropped} characters cut: the answer is limited in size]"


def cut_json_string(text: str, max_escaped: int) -> str:
    """``text`` cut so that, JSON-escaped, it takes at most ``max_escaped`` characters, marker included.

    Unchanged when it fits. The cut falls between characters (never inside an
    escape, never between the halves of a surrogate pair) and the marker says
    how many characters were dropped.
    """
    if len(text) * 6 <= max_escaped or escaped_length(text) <= max_escaped:
        return text
    room = max(0, max_escaped - len(cut_marker(len(text))))
    ends = list(accumulate(map(_escaped, text)))
    keep = _fitting_prefix(ends, room)
    keep = safe_cut_index(text, keep, toward_start=True)
    return text[:keep] + cut_marker(len(text) - keep)


def cut_text(text: str, max_chars: int) -> str:
    """Plain ``text`` cut to at most ``max_chars`` characters, marker included (unchanged when it fits)."""
    if len(text) <= max_chars:
        return text
    keep = safe_cut_index(text, max(0, max_chars - len(cut_marker(len(text)))), toward_start=True)
    return text[:keep] + cut_marker(len(text) - keep)


def _fitting_prefix(ends: list[int], room: int) -> int:
    """The longest prefix whose cumulative escaped length (``ends``) is at most ``room``."""
    low, high = 0, len(ends)
    while low < high:
        mid = (low + high + 1) // 2
        if ends[mid - 1] <= room:
            low = mid
        else:
            high = mid - 1
    return low


def size(value: Any) -> int:
    """The length of ``value`` as ``shapes.dumps`` (and the mcp-memory profile) print it."""
    return len(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")))


def leading(sizes: Sequence[int], room: int, sep: int = SEP) -> int:
    """How many leading entries of these sizes fit in ``room`` characters, separators counted."""
    total = 0
    for count, entry in enumerate(sizes):
        total += entry + (sep if count else 0)
        if total > room:
            return count
    return len(sizes)


@dataclass(slots=True)
class Fitted:
    """The entries an answer keeps: ``count`` leading ones of the original, the first perhaps shrunk."""

    entries: list[Any]
    count: int
    dropped: bool  # entries after ``count`` were left out: the answer needs a cursor
    cut: bool  # something was left out or shrunk: the answer says ``truncated``


def fit_entries(
    entries: Sequence[T],
    room: int,
    measure: Callable[[T], int],
    shrink: Callable[[T, int], T],
    sep: int = SEP,
) -> Fitted:
    """The leading ``entries`` that fit in ``room``; the first one shrunk when it alone does not."""
    count = leading([measure(e) for e in entries], room, sep)
    if count == len(entries):
        return Fitted(list(entries), count, False, False)
    if count == 0:
        return Fitted([shrink(entries[0], room)], 1, len(entries) > 1, True)
    return Fitted(list(entries[:count]), count, True, True)


def _shrink_content(entry: dict[str, Any], room: int) -> dict[str, Any]:
    """A memory entry whose content is cut so the whole entry takes at most ``room`` characters."""
    content = entry["content"]
    rest = size({**entry, "content": ""})
    return {**entry, "content": cut_json_string(content, max(0, room - rest))}


def _longest(cursors: Sequence[str]) -> str:
    return max(cursors, key=len, default="")


# triggerfish ---------------------------------------------------------------------------------


def listing(memories: Sequence[Memory], next_cursor: str | None, budget: int) -> dict[str, Any]:
    """``memory_list``'s page within ``budget``: cut after the last memory that fits, cursor after it."""
    whole = shapes.listing(memories, next_cursor)
    if size(whole) <= budget:
        return whole
    cursors = [encode_cursor(m) for m in memories]
    frame = size({"memories": [], "next_cursor": _longest(cursors), "truncated": True})
    fitted = fit_entries(whole["memories"], budget - frame, size, _shrink_content)
    cursor = cursors[fitted.count - 1] if fitted.dropped else next_cursor
    return {"memories": fitted.entries, "next_cursor": cursor, "truncated": True}


def search_results(hits: Sequence[Hit], query: str, offset: int, budget: int) -> dict[str, Any]:
    """``memory_search``'s results from ``offset`` on, within ``budget``; ``next_cursor`` continues them."""
    shown = hits[offset:]
    whole = shapes.search_results(shown, query)
    if size(whole) <= budget:
        return whole
    echoed = cut_json_string(query, budget // QUERY_SHARE)
    frame = size({"results": [], "query": echoed, "truncated": True, "next_cursor": encode_offset(len(hits))})
    fitted = fit_entries(whole["results"], budget - frame, size, _shrink_content)
    shape: dict[str, Any] = {"results": fitted.entries, "query": echoed, "truncated": True}
    if fitted.dropped:
        shape["next_cursor"] = encode_offset(offset + fitted.count)
    return shape


def found(shape: dict[str, Any], budget: int) -> dict[str, Any]:
    """``memory_get``'s answer within ``budget``: an over-long content cut with a marker."""
    if size(shape) <= budget:
        return shape
    frame = size({"truncated": True})  # its ", " and field, in place of the braces
    return {**_shrink_content(shape, budget - frame), "truncated": True}


def saved_many(saved: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    """``memory_save_many``'s answer: every item is saved; the list of them is cut to ``budget``."""
    whole = {"saved": len(saved), "memories": saved}
    if size(whole) <= budget:
        return whole
    frame = size({"saved": len(saved), "memories": [], "truncated": True})
    fitted = fit_entries(saved, budget - frame, size, lambda entry, room: entry)
    return {"saved": len(saved), "memories": fitted.entries, "truncated": True}


# plain text (zeroclaw, knowledge) --------------------------------------------------------------


def lines(
    header: Callable[[int], str], entries: Sequence[str], budget: int, cursor: Callable[[int], str]
) -> str:
    """A header and one line per entry, within ``budget``; a cut list ends with ``more: use cursor=<c>``.

    ``header(n)`` is the first line for ``n`` entries shown; ``cursor(n)`` continues after ``n``.
    """
    whole = "\n".join([header(len(entries)), *entries])
    if len(whole) <= budget:
        return whole
    more = "\n" + MORE_PREFIX + cursor(len(entries))
    frame = len(header(len(entries))) + 1 + len(more)
    fitted = fit_entries(entries, budget - frame, len, lambda line, room: cut_text(line, room), sep=1)
    tail = [MORE_PREFIX + cursor(fitted.count)] if fitted.dropped else []
    return "\n".join([header(fitted.count), *fitted.entries, *tail])


def records(
    header: Callable[[int], str],
    entries: Sequence[dict[str, Any]],
    budget: int,
    tail: Callable[[int], str | None],
) -> str:
    """JSON Lines records (a memory export) within ``budget``; ``tail(n)`` is the last line after ``n``."""
    texts = [shapes.dumps(e) for e in entries]
    last = tail(len(entries))
    whole = "\n".join([header(len(entries)), *texts, *([last] if last else [])])
    if len(whole) <= budget:
        return whole
    longest = max((len(tail(n) or "") for n in range(1, len(entries) + 1)), default=0)
    frame = len(header(len(entries))) + 2 + longest  # the header, the last line and their newlines
    fitted = fit_entries(entries, budget - frame, size, _shrink_content, sep=1)
    after = tail(fitted.count)
    kept = [shapes.dumps(e) for e in fitted.entries]
    return "\n".join([header(fitted.count), *kept, *([after] if after else [])])


# mcp-memory ------------------------------------------------------------------------------------


@dataclass(slots=True)
class Unit:
    """What a graph answer shows for one name (or one search hit): its entities and the relations it brings."""

    entities: list[dict[str, Any]]
    relations: list[dict[str, Any]] = field(default_factory=list)

    def measure(self) -> int:
        return sum(size(e) + SEP for e in self.entities) + sum(size(r) + SEP for r in self.relations)


def shrink_entity(entity: dict[str, Any], room: int, field: str = "observations") -> dict[str, Any]:
    """An entity within ``room`` characters: the observations that fit, in order, and how many were left out."""
    observations: list[str] = entity[field]
    frame = size({**entity, field: [], OMITTED: len(observations)})
    free = room - frame
    kept = leading([escaped_length(o) + 2 for o in observations], free)
    shown = list(observations[:kept])
    if not shown and observations and free > 2:
        shown = [cut_json_string(observations[0], free - 2)]
        kept = 1
    return {**entity, field: shown, OMITTED: len(observations) - kept}


def written(
    items: list[dict[str, Any]], wrap: str, field: str | None, budget: int
) -> list[Any] | dict[str, Any]:
    """A graph write's answer (the official server's JSON array of what was written) within ``budget``.

    An array has no room for a marker, so a cut answer is the structured form the official server sends
    beside it, ``{wrap: [...], "truncated": true}``, with the leading items that fit; an item's list
    ``field`` (observations) keeps what fits and counts the rest. Everything was written either way.
    """
    if size(items) <= budget:
        return items
    frame = size({wrap: [], "truncated": True, "omitted": len(items)})

    def shrink(item: dict[str, Any], room: int) -> dict[str, Any]:
        return shrink_entity(item, room, field) if field is not None else item

    fitted = fit_entries(items, budget - frame, size, shrink)
    return {wrap: fitted.entries, "truncated": True, "omitted": len(items) - fitted.count}


def _shrink_unit(unit: Unit, room: int) -> Unit:
    """The first unit alone over the budget: relations take at most half, its entities share the rest."""
    sizes = [size(r) for r in unit.relations]
    relations = unit.relations[: leading(sizes, room // 2)]
    left = room - size(relations)
    share = max(0, left // max(1, len(unit.entities)) - SEP)
    return Unit([shrink_entity(e, share) for e in unit.entities], relations)


def graph(
    units: Sequence[Unit], budget: int, resume: Callable[[int], str | None], whole: dict[str, Any]
) -> dict[str, Any]:
    """A read's ``{"entities", "relations"}`` within ``budget``: ``whole`` when it fits, else the leading units.

    ``resume(n)`` is the cursor after ``n`` units (``None``: nothing follows).
    """
    if size(whole) <= budget:
        return whole
    cursors = [resume(n) or "" for n in range(1, len(units) + 1)]
    frame = size({"entities": [], "relations": [], "truncated": True, "next_cursor": _longest(cursors)})
    fitted = fit_entries(units, budget - frame, Unit.measure, _shrink_unit, sep=0)
    shape: dict[str, Any] = {
        "entities": [e for u in fitted.entries for e in u.entities],
        "relations": [r for u in fitted.entries for r in u.relations],
        "truncated": True,
    }
    cursor = resume(fitted.count)
    if cursor is not None:
        shape["next_cursor"] = cursor
    return shape


# the last guard ------------------------------------------------------------------------------------


def bound(text: str, budget: int) -> str:
    """Any answer text within ``budget``, whatever produced it (a redaction that grew it, a new tool).

    The handlers fit their answers with a cursor; this guard only keeps the
    bound for what they did not foresee: JSON stays JSON (its longest strings
    cut, then its longest lists, with ``"truncated": true``), text is cut
    with a marker.
    """
    if len(text) <= budget:
        return text
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return cut_text(text, budget)
    if not isinstance(data, dict):
        return cut_text(text, budget)
    data["truncated"] = True
    for cap in (4096, 1024, 256, 64):
        capped = _cap(data, cap, None)
        if size(capped) <= budget:
            return shapes.dumps(capped)
    for items in (100, 10, 1, 0):
        capped = _cap(data, 64, items)
        if size(capped) <= budget:
            return shapes.dumps(capped)
    return shapes.dumps({"truncated": True})


def _cap(value: Any, chars: int, items: int | None) -> Any:
    if isinstance(value, str):
        return cut_json_string(value, chars)
    if isinstance(value, list):
        kept = value if items is None else value[:items]
        return [_cap(v, chars, items) for v in kept]
    if isinstance(value, dict):
        return {k: _cap(v, chars, items) for k, v in value.items()}
    return value
