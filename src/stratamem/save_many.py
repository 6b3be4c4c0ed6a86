"""Checking a batch of saves before any of it is written.

``Session.save_many`` and ``policy.gated_save_many`` both take a sequence of
mappings shaped like ``save``'s arguments (``key``, ``content``, optional
``tags``, ``category``, ``ttl``, ``occurred_at``, ``context``). Every item is validated exactly as ``save``
validates one; the first bad item fails the whole batch with a
``ValidationError`` naming its index, before anything is written, so a batch
is all or nothing. A batch larger than the store's ``max_batch`` is refused
the same way (the caller splits it; one transaction stays bounded).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .errors import ValidationError
from .storage.records import MemoryDraft
from .validation import (
    check_category,
    check_content,
    check_context,
    check_key,
    check_occurred_at,
    check_tags,
    check_ttl,
)

DEFAULT_MAX_BATCH = 10_000
FIELDS = frozenset({"key", "content", "tags", "category", "ttl", "occurred_at", "context"})


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One validated item: the write as ``save`` would store it, and its time to live in seconds."""

    key: str
    content: str
    tags: tuple[str, ...]
    category: str
    ttl_s: float | None
    occurred_at: datetime | None = None
    context: str | None = None

    def draft(self, now: datetime) -> MemoryDraft:
        expires = now + timedelta(seconds=self.ttl_s) if self.ttl_s is not None else None
        return MemoryDraft(
            self.key, self.content, self.tags, self.category, expires, self.occurred_at, self.context
        )


def check_max_batch(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError("max_batch must be a positive integer")
    return value


def check_batch(items: object, max_batch: int, max_content_bytes: int) -> list[BatchItem]:
    """Every item validated, in order; the first bad one raises naming its index (0-based)."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise ValidationError("save_many takes a list of items (mappings with key and content)")
    checked: list[BatchItem] = []
    for index, item in enumerate(items):
        if index >= max_batch:
            raise ValidationError(
                f"batch too large: more than the maximum of {max_batch} items; "
                "split it into several save_many calls"
            )
        checked.append(_check_item(index, item, max_content_bytes))
    return checked


def _check_item(index: int, item: object, max_content_bytes: int) -> BatchItem:
    try:
        if type(item) is not dict and not isinstance(item, Mapping):  # dict first: the ABC check is slow
            raise ValidationError("must be a mapping with key and content")
        unknown = [str(name)[:40] for name in item if name not in FIELDS]
        if unknown:
            raise ValidationError(f"unknown field(s) {sorted(unknown)[:5]!r}")
        if "key" not in item or "content" not in item:
            raise ValidationError("key and content are required")
        return BatchItem(
            key=check_key(item["key"]),
            content=check_content(item["content"], max_content_bytes),
            tags=check_tags(item.get("tags", ())),
            category=check_category(item.get("category", "core")),
            ttl_s=check_ttl(item.get("ttl")),
            occurred_at=check_occurred_at(item.get("occurred_at")),
            context=check_context(item.get("context")),
        )
    except ValidationError as exc:
        raise ValidationError(f"item {index}: {exc.message}") from None


def as_items(items: Sequence[BatchItem]) -> list[dict[str, Any]]:
    """Checked items back as save_many mappings (the gate rewrites content and tags, then saves them)."""
    return [
        {
            "key": i.key,
            "content": i.content,
            "tags": i.tags,
            "category": i.category,
            "ttl": i.ttl_s,
            "occurred_at": i.occurred_at,
            "context": i.context,
        }
        for i in items
    ]
