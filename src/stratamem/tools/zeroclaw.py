"""The zeroclaw profile: ZeroClaw-compatible memory tools answering in plain text.

Output formats (documented choices where ZeroClaw leaves room):

- ``memory_store`` -> ``Stored memory: <key>``
- ``memory_recall`` -> ``Found N memories:`` then one line per memory,
  ``- [category] key: content [NN%]``, lines joined by ``\\n`` with no trailing
  newline; or ``No memories found.``. NN is the score as a percentage of the
  best hit's score (the best is ``[100%]``); results ordered by time (empty
  query or ``*``, or only since/until) carry no bracket. ``since``/``until``
  filter on ``created_at``; with a query, they filter the best 100 matches.
- Every answer is cut to the store's ``max_answer_chars`` (``stratamem.budget``):
  ``memory_recall`` then ends with ``more: use cursor=<cursor>`` (the same call
  with ``cursor`` continues), ``memory_export``'s last line continues after the
  last record shown; a single over-long content is cut with a marker.
- ``memory_forget`` -> ``Forgot memory: <key>`` / ``No memory found with key: <key>``
- ``memory_export`` -> ``Exported N memories:`` then one JSON object per line
  (``stratamem.shapes.export_record``), or ``No memories found.``. One page
  (``limit``, default 50, at most 200, ordered by agent then key; filters run
  in the store); when more exist a last line ``more: use cursor=<cursor>``.
- ``memory_recall`` with only since/until: the newest ``limit`` memories
  created in the range, selected in the store.
- ``memory_purge`` -> ``Purged N memories from session '<id>'``.

Errors (bad arguments, refusals) use the JSON error shape, like every profile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import shapes
from ..budget import DEFAULT_MAX_ANSWER_CHARS
from ..errors import NotFound, ValidationError
from ..models import Memory
from ..paging import MAX_PAGE_SIZE, decode_offset, encode_cursor, encode_offset
from ..policy.scanner import QUARANTINE_TAG
from . import fit
from .visibility import shown_hits, with_quarantine

if TYPE_CHECKING:
    from ..session import Session

NO_MEMORIES = "No memories found."
RECENT_QUERIES = ("", "*")
MORE_PREFIX = fit.MORE_PREFIX
FILTER_WINDOW = 100  # matches considered when a query is combined with a time range

Handler = Callable[["Session", dict[str, Any], bool], str]


# pure formatting ------------------------------------------------------------------


def percent(score: float, best: float) -> int:
    """A score relative to the best hit, as a whole percentage (the best is 100)."""
    return round(100 * score / best) if best > 0 else 0


def recall_text(
    entries: Sequence[tuple[Memory, float | None]], offset: int = 0, budget: int = DEFAULT_MAX_ANSWER_CHARS
) -> str:
    """ZeroClaw's recall listing from ``offset`` on; ``None`` scores (time-ordered results) print no bracket.

    Percentages stay relative to the best of all ``entries``. A listing over ``budget`` characters
    ends after the last line that fits with ``more: use cursor=<c>`` (the same call with that cursor
    continues).
    """
    if len(entries) <= offset:
        return NO_MEMORIES
    scores = [s for _, s in entries if s is not None]
    best = max(scores, default=0.0)
    lines = []
    for memory, score in entries[offset:]:
        bracket = f" [{percent(score, best)}%]" if score is not None and best > 0 else ""
        lines.append(f"- [{memory.category}] {memory.key}: {memory.content}{bracket}")
    return fit.lines(lambda n: f"Found {n} memories:", lines, budget, lambda n: encode_offset(offset + n))


def export_text(
    memories: Sequence[Memory], next_cursor: str | None = None, budget: int = DEFAULT_MAX_ANSWER_CHARS
) -> str:
    """The export listing; a last ``more: use cursor=<c>`` line when another page exists.

    A page over ``budget`` characters ends after the last record that fits (an over-long first
    record has its content cut with a marker), and its cursor continues after that record.
    """
    if not memories:
        return NO_MEMORIES

    def tail(shown: int) -> str | None:
        after = encode_cursor(memories[shown - 1]) if shown < len(memories) else next_cursor
        return None if after is None else f"{MORE_PREFIX}{after}"

    records = [shapes.export_record(m) for m in memories]
    return fit.records(lambda n: f"Exported {n} memories:", records, budget, tail)


def in_range(memory: Memory, since: datetime | None, until: datetime | None) -> bool:
    return (since is None or memory.created_at >= since) and (until is None or memory.created_at <= until)


def _check_range(since: datetime | None, until: datetime | None) -> None:
    if since is not None and until is not None and since > until:
        raise ValidationError("since must not be after until")


# handlers ---------------------------------------------------------------------------


def memory_store(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    memory = session.save(
        args["key"],
        args["content"],
        tags=with_quarantine((), quarantine),
        category=args["category"],
        occurred_at=args.get("occurred_at"),
        context=args.get("context"),
    )
    return f"Stored memory: {memory.key}"


def memory_recall(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    query, limit, since, until = args["query"] or "", args["limit"], args["since"], args["until"]
    _check_range(since, until)
    offset = decode_offset(args["cursor"]) if args.get("cursor") is not None else 0
    budget = session.store.max_answer_chars
    timed = since is not None or until is not None
    if query.strip() in RECENT_QUERIES:
        if timed:  # the time range and the limit are applied in the store, newest first
            memories = session.recent(limit, since=since, until=until, without_tag=QUARANTINE_TAG)
        else:
            memories = [h.memory for h in shown_hits(session.search("", max_results=limit))]
        return recall_text([(m, None) for m in memories[:limit]], offset, budget)
    hits = shown_hits(session.search(query, max_results=FILTER_WINDOW if timed else limit))
    hits = [h for h in hits if in_range(h.memory, since, until)][:limit]
    return recall_text([(h.memory, h.score) for h in hits], offset, budget)


def memory_forget(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    try:
        memory = session.delete(args["key"])
    except NotFound:
        return f"No memory found with key: {args['key']}"
    return f"Forgot memory: {memory.key}"


def memory_export(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    since, until = args["since"], args["until"]
    _check_range(since, until)
    page = session.list(
        limit=args["limit"],
        cursor=args["cursor"],
        category=args["category"],
        saved_by=args["session_id"],
        since=since,
        until=until,
        without_tag=QUARANTINE_TAG,
    )
    return export_text(page, page.next_cursor, session.store.max_answer_chars)


def memory_purge(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    """Soft-delete the own agent's memories at the current taint that ``session_id`` saved.

    The versions at exactly the taint are never shadowed, so the visible list
    holds all of them. If the taint changes mid-way we stop: a delete would
    then hit another level's version, which that session did not save.
    """
    target = args["session_id"]
    record = session.record
    victims: list[str] = []
    cursor: str | None = None
    while True:  # page through the store's filtered view instead of loading every memory
        page = session.list(limit=MAX_PAGE_SIZE, cursor=cursor, saved_by=target)
        # at exactly the taint's label (level and compartments): delete retires that version only
        victims += [
            m.key for m in page if m.agent_id == record.agent_id and m.label_code == record.taint_code
        ]
        if (cursor := page.next_cursor) is None:
            break
    purged = 0
    for key in victims:
        if session.record.taint_code != record.taint_code:
            break
        try:
            session.delete(key)
        except NotFound:
            continue
        purged += 1
    return f"Purged {purged} memories from session '{target}'"


HANDLERS: dict[str, Handler] = {
    "memory_store": memory_store,
    "memory_recall": memory_recall,
    "memory_forget": memory_forget,
    "memory_export": memory_export,
    "memory_purge": memory_purge,
}
