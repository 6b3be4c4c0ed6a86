"""A LangGraph ``BaseStore`` over a stratamem session: classified memory by swapping the store.

``StratamemStore(session)`` answers LangGraph's operations (``get``, ``put``,
``delete``, ``search``, ``list_namespaces``, ``batch``/``abatch`` and their
async forms) with the session's own reads and gated writes, so everything a
graph stores is classified at the session's taint, passes the policy gate,
lands in the audit chain, and is seen only by sessions allowed to see it.

Mapping (documented in the README):

- an item ``(namespace, key)`` is the memory ``"a.b..key"``: the namespace
  labels joined by ``.`` (LangGraph forbids ``.`` in labels, and labels are
  non-empty, so the first ``..`` splits it unambiguously), then ``..`` and the
  item key; memory keys are at most 256 characters;
- the value is the memory's content, as JSON;
- every namespace prefix is a tag ``lgns:a``, ``lgns:a.b`` (so a search
  under a prefix is a tag-filtered listing in the store), and the category
  is ``langgraph`` (so other memories never appear as items);
- ``ttl`` (minutes, LangGraph's unit) becomes the memory's expiry; it counts
  from the last write (reading does not refresh it: ``refresh_on_read`` is
  not supported, a read never writes);
- a ``query`` uses stratamem's search in the store's mode (hybrid where
  search by meaning is available, lexical otherwise) over the session's
  visible memories, then keeps the hits under the prefix that pass
  ``filter``. Namespaces are filters, never search terms: a query word that
  is a namespace label does not score (``Session.search``'s ``unranked``),
  the item's value (and its key) does; hits are relevant ones only
  (scores as ``session.search``'s, above zero); ``index=`` is accepted for compatibility: the store's own index
  answers, LangGraph's embedder is never called.

Needs the ``langgraph`` extra (``langgraph-checkpoint``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import NotFound
from ..extras import require
from ..models import Memory
from ..policy.gate import gated_save
from ..session import Session
from ..text import Analyzer

require("langgraph")
from langgraph.store.base import (  # noqa: E402 - after the install hint
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.memory import _compare_values, _does_match  # noqa: E402 - LangGraph's own semantics

CATEGORY = "langgraph"
TAG_PREFIX = "lgns:"
SEPARATOR = ".."
PAGE = 200  # memories read per listing page while scanning


def memory_key(namespace: tuple[str, ...], key: str) -> str:
    return ".".join(namespace) + SEPARATOR + key


def split_key(stored: str) -> tuple[tuple[str, ...], str] | None:
    """(namespace, key) of a memory key this store wrote, or None for any other key."""
    head, sep, key = stored.partition(SEPARATOR)
    if not sep or not head:
        return None
    return tuple(head.split(".")), key


def namespace_tags(namespace: tuple[str, ...]) -> list[str]:
    return [TAG_PREFIX + ".".join(namespace[:depth]) for depth in range(1, len(namespace) + 1)]


def _terms(analyzer: Analyzer, labels: Iterable[str]) -> set[str]:
    """The stemmed terms namespace labels index as (what ``Session.search``'s ``unranked`` leaves out)."""
    return set(analyzer.document_terms("", " ".join(labels), ())[0])


def _item(memory: Memory, score: float | None = None, *, search: bool = False) -> Item | None:
    if memory.category != CATEGORY:
        return None
    parts = split_key(memory.key)
    if parts is None:
        return None
    try:
        value = json.loads(memory.content)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    namespace, key = parts
    if search:
        return SearchItem(
            namespace=namespace,
            key=key,
            value=value,
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            score=score,
        )
    return Item(
        namespace=namespace, key=key, value=value, created_at=memory.created_at, updated_at=memory.updated_at
    )


class StratamemStore(BaseStore):
    """LangGraph's store interface over one stratamem session (its taint classifies every write)."""

    supports_ttl = True

    def __init__(
        self,
        session: Session,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        policy: Any = None,
    ) -> None:
        self.session = session
        self.index_config = index
        self.ttl_config = ttl
        self.policy = policy

    # the batch ------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (a put is visible to a later get in the same batch)."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            results.append(self._one(op))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The same, off the event loop (the store's calls block)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            memory = self.session.get(memory_key(op.namespace, op.key))
            return None if memory is None else _item(memory)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown operation {type(op).__name__}")

    def _put(self, op: PutOp) -> None:
        key = memory_key(op.namespace, op.key)
        if op.value is None:
            try:
                self.session.delete(key)
            except NotFound:
                pass  # deleting what is not there (at this taint) is not an error in LangGraph
            return
        ttl = op.ttl  # BaseStore.put already applied the default_ttl when none was given
        content = json.dumps(op.value, ensure_ascii=False, default=str)
        gated_save(
            self.session,
            key,
            content,
            tags=namespace_tags(op.namespace),
            category=CATEGORY,
            ttl=None if ttl is None else float(ttl) * 60,
            policy=self.policy,
            path="langgraph",
            origin="langgraph",
        )

    def _items(self, prefix: tuple[str, ...]) -> Iterator[Item]:
        """Every visible item under ``prefix``, in the store's (agent, key) order, page by page."""
        tag = TAG_PREFIX + ".".join(prefix) if prefix else None
        cursor = None
        while True:
            page = self.session.list(tag=tag, category=CATEGORY, limit=PAGE, cursor=cursor)
            for memory in page:
                item = _item(memory)
                if item is not None and item.namespace[: len(prefix)] == prefix:
                    yield item
            cursor = page.next_cursor
            if cursor is None:
                return

    def _matches(self, item: Item, op: SearchOp) -> bool:
        return not op.filter or all(_compare_values(item.value.get(k), v) for k, v in op.filter.items())

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        limit, offset = max(0, op.limit), max(0, op.offset)
        found: list[SearchItem] = []
        if op.query:
            found = self._ranked(op, prefix)
            return found[offset : offset + limit]
        for item in self._items(prefix):
            if self._matches(item, op):
                found.append(
                    SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at)
                )
                if len(found) >= offset + limit:
                    break
        return found[offset : offset + limit]

    def _ranked(self, op: SearchOp, prefix: tuple[str, ...]) -> list[SearchItem]:
        """The query's hits under ``prefix`` that pass ``filter``, best first; namespaces only filter.

        Namespace labels are written into each memory's key and tags, so a query word that names one
        (``"user"`` under ``("users", "u1")``) would match every item under it and rank them by length.
        The labels are therefore passed as ``unranked``: the prefix's first, then those of the
        namespaces found below it, searching again while one of them held a query term (at most once
        a term, so this ends).
        """
        query, analyzer = op.query or "", self.session.store.analyzer
        labels = set(prefix)
        left = set(analyzer.query_terms(query)) - _terms(analyzer, labels)  # the query terms still ranked
        while True:
            found: list[SearchItem] = []
            for hit in self.session.search(query, max_results=100, unranked=sorted(labels)):
                item = _item(hit.memory, hit.score, search=True)
                if item is not None and item.namespace[: len(prefix)] == prefix and self._matches(item, op):
                    found.append(item)  # type: ignore[arg-type]
            below = {label for item in found for label in item.namespace} - labels
            named = left & _terms(analyzer, below)
            if not named:
                return found
            labels |= below
            left -= named

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        for item in self._items(()):
            namespace = item.namespace
            if op.match_conditions and not all(_does_match(c, namespace) for c in op.match_conditions):
                continue
            seen.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(seen)[op.offset : op.offset + op.limit]


__all__ = ["StratamemStore", "memory_key", "namespace_tags", "split_key"]
