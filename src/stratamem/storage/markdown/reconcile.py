"""Hand edits to the Markdown files, applied to the sidecar index as audited operator acts.

Given the files that changed, appeared or disappeared since the last scan
(already parsed), this decides per (agent, label) what the files now say and
changes the sidecar to match, in one transaction:

- a section that is new or differs is written (its lineage and creation time
  kept when the file leaves them out; ``updated`` becomes now when the content
  changed but the line was not touched);
- a section removed from a file is soft-deleted (kept until purge, like any delete);
- a section that appears in another label folder with the same lineage id
  moved there: the old label's version is soft-deleted and the move audited;
- a file that disappeared deletes nothing: what it held and was not moved is
  written back from the index (and reported) — remove sections, not files,
  to delete memories;
- a file that does not parse, or would put a key twice in one level, is
  reported with its file and line and changes nothing.

A label is handled as its stored integer (``Parsed.code``, the ``level`` column), so a section in
``<agent>/CONFIDENTIAL+HR/`` is written, compared and deleted at that label; a folder whose label the
store cannot encode never reaches here (``sync`` reports it).

While a write runs, a hand edit can land in a file between the store's read
and its replace; the store then applies it here with ``keep``, the keys that
write changed: their index version wins and their sections in the file are
ignored, so the write is not undone. A file whose section for such a key
differs from both its version before the write and the new one was edited on
that very key: it is named in ``Outcome.conflicts`` and kept as a conflict copy.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...audit import AuditDraft, operator_draft
from ...errors import StorageError
from ...labels import Compartments, Label, level_of
from ...models import Memory
from ..sql.rows import MEMORY_COLUMNS, MEMORY_WIDTH, row_to_memory, row_with_context, to_us
from ..sqlite import versions as sqlite_versions
from . import format as fmt
from .files import FileProblem

if TYPE_CHECKING:
    from ..sqlite.backend import SQLiteBackend

LIVE_SQL = (
    f"SELECT {MEMORY_COLUMNS}, length, context FROM memories "
    "WHERE agent_id = ? AND level = ? AND deleted_us IS NULL"
)


@dataclass
class Parsed:
    """A changed or added file that parsed: where it is, its label's stored integer and its sections."""

    rel: str
    agent: str
    place: fmt.Place
    sections: list[fmt.Section]
    code: int


@dataclass
class Outcome:
    drafts: list[AuditDraft] = field(default_factory=list)
    problems: list[FileProblem] = field(default_factory=list)
    bad: set[str] = field(default_factory=set)  # parsed files refused (duplicate keys)
    restore: set[str] = field(default_factory=set)  # disappeared files to write back
    conflicts: set[str] = field(default_factory=set)  # files with a hand edit of a key in ``keep``


def label_of(known: Compartments, code: int) -> Label:
    """The label of a stored code; a bit the registry does not hold is the sidecar's inconsistency, refused."""
    try:
        return known.decode(code)
    except KeyError:
        raise StorageError(
            f"the Markdown sidecar holds a label ({code}) with a compartment its registry does not define"
        ) from None


def file_of(memory: Memory, known: Compartments) -> str:
    """The file a sidecar row lives in (``known``: the registry that names its label's compartments)."""
    label = label_of(known, memory.label_code)
    return fmt.file_for(fmt.encode_segment(memory.agent_id), label, memory.category, memory.created_at)


def apply(
    backend: SQLiteBackend,
    conn: sqlite3.Connection,
    parsed: list[Parsed],
    removed: dict[str, tuple[str, int]],
    now: datetime,
    keep: Mapping[tuple[str, int, str], tuple[Any, ...] | None] | None = None,
    known: Compartments | None = None,
) -> Outcome:
    """Make the sidecar say what the files say; ``backend`` is the sidecar ``SQLiteBackend``.

    ``removed``: files gone since the last scan, each with (agent, label code); ``keep``: keys a running
    write changed, each with its live row before that write (None: none); ``known``: the store's
    compartments (how a row's label names its folder).
    """
    out = Outcome()
    keep = keep or {}
    known = known or Compartments()
    pairs = {(p.agent, p.code) for p in parsed} | set(removed.values())
    live: dict[tuple[str, int], dict[str, tuple[Any, ...]]] = {}
    for agent, code in pairs:
        live[(agent, code)] = {r[2]: r for r in conn.execute(LIVE_SQL, (agent, code))}
    if keep:
        parsed = [_without_kept(p, keep, live[(p.agent, p.code)], now, out, known) for p in parsed]
    touched = {p.rel for p in parsed} | set(removed)
    claims: dict[tuple[str, int, str], tuple[Parsed, fmt.Section]] = {}
    for p in sorted(parsed, key=lambda p: p.rel):
        problem = _conflict(p, claims, live[(p.agent, p.code)], touched, known)
        if problem:
            out.problems.append(problem)
            out.bad.add(p.rel)
            continue
        for s in p.sections:
            claims[(p.agent, p.code, s.key)] = (p, s)
    good = {p.rel for p in parsed} - out.bad
    lineages = {
        (agent, s.lineage_id): (code, p.rel) for (agent, code, _), (p, s) in claims.items() if s.lineage_id
    }
    now_us = to_us(now)
    per_file: dict[str, dict[str, Any]] = {}  # keys, levels, lineage lists; saved, deleted counts

    def note(rel: str, memory: Memory, what: str) -> None:
        entry = per_file.setdefault(rel, {"keys": [], "levels": [], "lineage": [], "saved": 0, "deleted": 0})
        entry["keys"].append(memory.key)
        entry["levels"].append(memory.level)
        entry["lineage"].append(memory.lineage_id)
        entry[what] += 1

    for (agent, code, key), (p, s) in sorted(claims.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        existing = live[(agent, code)].get(key)
        memory = _desired(p, s, existing, now)
        if existing is not None and _stored(existing) == memory:
            continue
        terms, length = backend.analyzer.document_terms(memory.key, memory.content, memory.tags)
        sqlite_versions.write_version(
            conn, backend.analyzer, memory, terms, length, keep_created=False, now_us=now_us
        )
        note(p.rel, memory, "saved")
    for (agent, code), versions in live.items():
        for key, row in versions.items():
            memory = row_to_memory(row[:MEMORY_WIDTH])
            holder = file_of(memory, known)
            if (agent, code, key) in claims or (agent, code, key) in keep:
                continue
            moved = lineages.get((agent, memory.lineage_id))
            if holder in good or (holder in removed and moved):
                sqlite_versions.remove_live(
                    conn,
                    backend.analyzer,
                    (row[0], row[1], row[2], row[3], row[4], row[5], row[MEMORY_WIDTH]),
                    now_us,
                )
                note(holder, memory, "deleted")
                if moved and moved[0] != code:
                    out.drafts.append(
                        operator_draft(
                            "markdown.move",
                            agent_id=agent,
                            keys=(key,),
                            levels=(level_of(code), level_of(moved[0])),
                            lineage_ids=(memory.lineage_id,),
                            detail={"from": holder, "to": moved[1]},
                        )
                    )
            elif holder in removed:
                out.restore.add(holder)
    for rel in sorted(out.restore):
        out.problems.append(
            FileProblem(
                rel,
                "file was removed while the store was open; its memories were "
                "written back from the index (remove sections to delete memories)",
            )
        )
    for rel, entry in sorted(per_file.items()):
        agent, _ = removed.get(rel) or next((p.agent, p.code) for p in parsed if p.rel == rel)
        out.drafts.append(
            operator_draft(
                "markdown.edit",
                agent_id=agent,
                keys=tuple(entry["keys"]),
                levels=tuple(entry["levels"]),
                lineage_ids=tuple(entry["lineage"]),
                detail={"file": rel, "saved": entry["saved"], "deleted": entry["deleted"]},
            )
        )
    return out


def _without_kept(
    p: Parsed,
    keep: Mapping[tuple[str, int, str], tuple[Any, ...] | None],
    live: dict[str, tuple[Any, ...]],
    now: datetime,
    out: Outcome,
    known: Compartments,
) -> Parsed:
    """``p`` without its sections for kept keys; a file that edited one by hand is noted as a conflict."""
    sections = []
    for s in p.sections:
        slot = (p.agent, p.code, s.key)
        if slot not in keep:
            sections.append(s)
            continue
        candidates = [row for row in (keep[slot], live.get(s.key)) if row is not None]
        if not any(_desired(p, s, row, now) == _stored(row) for row in candidates):
            out.conflicts.add(p.rel)
    shown = {s.key for s in p.sections}
    for (agent, code, key), before in keep.items():
        if (agent, code) != (p.agent, p.code) or key in shown or before is None:
            continue
        if key in live and file_of(row_to_memory(before[:MEMORY_WIDTH]), known) == p.rel:
            out.conflicts.add(p.rel)  # a section this write changed was removed by hand meanwhile
    return dataclasses.replace(p, sections=sections)


def _conflict(
    p: Parsed,
    claims: dict[tuple[str, int, str], tuple[Parsed, fmt.Section]],
    live: dict[str, tuple[Any, ...]],
    touched: set[str],
    known: Compartments,
) -> FileProblem | None:
    for s in p.sections:
        other = claims.get((p.agent, p.code, s.key))
        if other is not None:
            return FileProblem(
                p.rel,
                f"key {s.key!r} is also in {other[0].rel} (line {other[1].line}); "
                "a level holds each key once",
                s.line,
            )
        row = live.get(s.key)
        if row is not None:
            holder = file_of(row_to_memory(row[:MEMORY_WIDTH]), known)
            if holder != p.rel and holder not in touched:
                return FileProblem(
                    p.rel, f"key {s.key!r} is also in {holder}; a level holds each key once", s.line
                )
        if s.category is None and p.place.default_category is None:
            return FileProblem(
                p.rel, "this file's name names no category: give each section a '- category:' line", s.line
            )
    return None


def _stored(row: tuple[Any, ...]) -> Memory:
    """A ``LIVE_SQL`` row as the record it stores, context included (what a section is compared with)."""
    return row_with_context(row, MEMORY_WIDTH + 1)


def _desired(p: Parsed, s: fmt.Section, existing: tuple[Any, ...] | None, now: datetime) -> Memory:
    """The version a section asks for, filling what the file leaves out from the stored version."""
    old = row_to_memory(existing[:MEMORY_WIDTH]) if existing is not None else None
    memory = s.memory(p.agent, p.code, p.place.default_category or "core", now)
    if old is None:
        return memory
    changes: dict[str, Any] = dict(
        lineage_id=s.lineage_id or old.lineage_id,
        created_at=s.created_at or old.created_at,
        session_id=s.session_id if s.session_id is not None else old.session_id,
        occurred_at=s.occurred_at or (old.occurred_at if s.created_at is None else s.created_at),
    )
    same_body = (memory.content, memory.tags, memory.category, memory.expires_at) == (
        old.content,
        old.tags,
        old.category,
        old.expires_at,
    )
    if s.updated_at is None or (not same_body and s.updated_at == old.updated_at):
        changes["updated_at"] = old.updated_at if same_body else now
    return dataclasses.replace(memory, **changes)
