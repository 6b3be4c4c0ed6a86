"""The triggerfish profile: five memory tools answering in the CONTRACT's JSON shapes.

Each handler takes the session and the already-checked arguments and returns
a shape (a dict from ``stratamem.shapes``). Errors are raised as
``StratamemError`` and turned into the error shape by the executor, so a
handler is only the happy path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import shapes
from ..paging import decode_offset
from ..policy.scanner import QUARANTINE_TAG
from . import fit
from .visibility import shown, shown_hits, with_quarantine

if TYPE_CHECKING:
    from ..session import Session

Handler = Callable[["Session", dict[str, Any], bool], Any]


def memory_save(session: Session, args: dict[str, Any], quarantine: bool) -> dict[str, Any]:
    memory = session.save(
        args["key"],
        args["content"],
        tags=with_quarantine(args["tags"] or (), quarantine),
        occurred_at=args.get("occurred_at"),
        context=args.get("context"),
    )
    return shapes.saved(memory)


def memory_get(session: Session, args: dict[str, Any], quarantine: bool) -> dict[str, Any]:
    return fit.found(shapes.got(args["key"], shown(session.get(args["key"]))), session.store.max_answer_chars)


def memory_search(session: Session, args: dict[str, Any], quarantine: bool) -> dict[str, Any]:
    """The ranked results from the cursor on (the same search, the first ones skipped), within the budget."""
    hits = shown_hits(session.search(args["query"], max_results=args["max_results"]))
    offset = decode_offset(args["cursor"]) if args["cursor"] is not None else 0
    return fit.search_results(hits, args["query"], offset, session.store.max_answer_chars)


def memory_list(session: Session, args: dict[str, Any], quarantine: bool) -> dict[str, Any]:
    page = session.list(
        tag=args["tag"],
        limit=args["limit"],
        cursor=args["cursor"],
        without_tag=QUARANTINE_TAG,
        occurred_since=args.get("occurred_since"),
        occurred_until=args.get("occurred_until"),
    )
    return fit.listing(page, page.next_cursor, session.store.max_answer_chars)


def memory_delete(session: Session, args: dict[str, Any], quarantine: bool) -> dict[str, Any]:
    memory = session.delete(args["key"])
    return shapes.deleted(memory.key)


HANDLERS: dict[str, Handler] = {
    "memory_save": memory_save,
    "memory_get": memory_get,
    "memory_search": memory_search,
    "memory_list": memory_list,
    "memory_delete": memory_delete,
}
