"""Keeping the Markdown files and the sidecar index saying the same thing.

``FileSync`` runs under the directory lock (``settle`` and ``flush``; ``fresh``
takes it) and does two things:

- hand edits into the index: a cheap scan (size and mtime per file against
  ``md_files``, then a hash) finds the files that changed, appeared or
  disappeared; ``reconcile`` applies what they now say as audited operator
  acts, and problems (a file that does not parse, a link) are reported once
  each and audited as ``markdown.error``;
- the index into the files: every file ``md_dirty`` marks is rendered from the
  sidecar's rows and written with ``replace.replace``, which refuses to
  overwrite a file edited since the store read it; such an edit is read and
  merged (``flush``), the keys the running write changed keeping the index's
  version, and a version it cannot merge is kept as a conflict copy.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ...audit import AuditDraft, operator_draft
from ...errors import StorageError, ValidationError
from ...labels import Compartments, Label
from ..sql.rows import row_with_context
from ..sqlite.backend import SQLiteBackend
from ..transaction import Tx
from . import files, reconcile, replace, sidecar, tables
from . import format as fmt
from .tables import Changes

log = logging.getLogger("stratamem.markdown")

SECTION_CACHE_CHARS = 32 * 1024 * 1024
MERGE_ROUNDS = 8
MAX_HELD = 64  # replaced files kept open until the next scan (see ``replace.replace``)


class FileSync:
    """The files of one store directory kept in step with its sidecar ``db``."""

    def __init__(
        self,
        root: str,
        sidecar_path: str,
        sidecar_fd: int,
        lock: sidecar.DirLock,
        db: SQLiteBackend,
        *,
        clock: Callable[[], datetime],
        max_content_bytes: int,
        max_file_bytes: int,
        scan_interval: float,
    ) -> None:
        self.root = root
        self.sidecar_path = sidecar_path
        self.sidecar_fd = sidecar_fd
        self.lock = lock
        self.db = db
        self.clock = clock
        self.max_content_bytes = max_content_bytes
        self.max_file_bytes = max_file_bytes
        self.scan_interval = scan_interval
        self.problems: list[dict[str, Any]] = []
        self._reported: set[tuple[Any, ...]] = set()
        self._last_scan = float("-inf")
        self._sections: dict[tuple[Any, ...], str] = {}
        self._cached = 0
        self._aside: set[str] = set()  # files holding a hand edit of a key the current write changed
        self._held: list[replace.Held] = []  # files replaced by the last write, open until the next scan

    def settle(self) -> None:
        """Finish any interrupted render, then apply hand edits and render what they changed (lock held)."""
        self.release_held()
        sidecar.check_open(self.sidecar_path, self.sidecar_fd)
        self.flush(None)
        restore = self._reconcile()
        self.flush({}, restore)
        self._last_scan = time.monotonic()

    def release_held(self) -> None:
        """Close the files the last write replaced; one written to through an old descriptor is kept."""
        held, self._held = self._held, []
        for old in held:
            try:
                kept = replace.release(self.root, old)
            except OSError as exc:
                log.warning("markdown store: cannot check the replaced %s: %s", old.rel, exc)
                continue
            if kept is not None:
                self._report(
                    files.FileProblem(
                        old.rel, f"an edit written while the store replaced it was kept as {kept}"
                    )
                )

    def take_changes(self) -> Changes:
        """The keys the last write changed, each with the version it had before; starts a new record."""
        return self.db.operator(tables.untimed(), tables.take_changes)

    def flush(self, mine: Changes | None, extra: dict[str, tuple[str, int]] | None = None) -> None:
        """Render every file the sidecar marked, merging hand edits that land meanwhile (lock held).

        A file edited since the store last read it is not overwritten: with
        ``mine`` (the keys this write changed) its edit is read and applied like
        any hand edit, the index keeping ``mine``, and the file rendered again;
        without it (finishing a killed writer's render: which keys are its is
        unknown) the edited file is kept as a conflict copy. An editor that keeps
        changing the file through every round gets a conflict copy too.
        """
        for _ in range(MERGE_ROUNDS):
            stale = self._render(extra, mine)
            if not stale:
                return
            extra = stale
            if mine is not None:
                extra = {**stale, **self._reconcile(mine)}
        self._render(extra, None, last=True)

    def fresh(self) -> None:
        """Before a read: apply hand edits if the last scan is older than ``scan_interval``."""
        if time.monotonic() - self._last_scan >= self.scan_interval:
            with self.lock.held():
                self.settle()

    def _report(self, problem: files.FileProblem) -> AuditDraft | None:
        key = (problem.path, problem.line, problem.reason)
        if key in self._reported:
            return None
        self._reported.add(key)
        self.problems.append(problem.as_dict())
        log.warning("markdown store: %s", problem)
        return operator_draft("markdown.error", outcome="error", detail=problem.as_dict())

    def _reconcile(self, keep: Changes | None = None) -> dict[str, tuple[str, int]]:
        """Apply hand edits to the index (``keep``: keys a running write changed, whose index version wins).

        A file's label folder becomes the label's stored integer through the store's registry; a folder
        naming a compartment the store does not define is reported and its files left unread (nothing of
        them is written; they are read once the operator defines it).
        """
        walk = files.walk(self.root)
        drafts = [d for p in walk.problems if (d := self._report(p))]
        known, registry = self.db.operator(tables.untimed(), _files_and_registry, read_only=True)
        stats, parsed, errors, removed = [], [], [], {}
        for rel, (size, mtime) in walk.files.items():
            place = fmt.place_of(rel)
            code = self._code_of(walk.label_of(rel), rel, registry, drafts)
            if code is None:
                continue
            old = known.get(rel)
            if old is not None and (old[2], old[3]) == (size, mtime):
                continue
            agent = walk.agent_names[place.agent_dir]
            try:
                text, digest = files.read_text(self.root, rel, self.max_file_bytes)
            except files.FileProblem as exc:
                errors.append((rel, agent, code, size, mtime, "", exc))
                continue
            if old is not None and old[4] == digest:
                stats.append((rel, agent, code, size, mtime, digest, old[5]))
                continue
            try:
                sections = fmt.parse_file(text, self.max_content_bytes)
            except fmt.FormatError as exc:
                errors.append(
                    (rel, agent, code, size, mtime, digest, files.FileProblem(rel, exc.reason, exc.line))
                )
                continue
            parsed.append((reconcile.Parsed(rel, agent, place, sections, code), size, mtime, digest))
        for rel, row in known.items():
            if rel not in walk.files:
                removed[rel] = (row[0], int(row[1]))
        if not (stats or parsed or errors or removed or drafts):
            return {}

        def apply(tx: Tx[sqlite3.Connection]) -> reconcile.Outcome:
            conn = tx.conn
            outcome = reconcile.apply(
                self.db, conn, [p for p, *_ in parsed], removed, tx.now, keep or {}, tables.registry(tx)
            )
            self._aside |= outcome.conflicts
            for rel, agent, code, size, mtime, digest, problem in errors:
                stats.append((rel, agent, code, size, mtime, digest, "error"))
                if d := self._report(problem):
                    drafts.append(d)
            for p, size, mtime, digest in parsed:
                status = "error" if p.rel in outcome.bad else "ok"
                stats.append((p.rel, p.agent, p.code, size, mtime, digest, status))
            for problem in outcome.problems:
                if d := self._report(problem):
                    drafts.append(d)
            tables.record_files(tx, list(removed), stats)
            for draft in [*drafts, *outcome.drafts]:
                tx.append(draft)
            return outcome

        outcome = self.db.operator(self.clock(), apply)
        return {rel: removed[rel] for rel in outcome.restore}

    def _code_of(
        self, label: Label, rel: str, registry: Compartments, drafts: list[AuditDraft]
    ) -> int | None:
        """The stored integer of a file's label, or None (reported once per folder) when the store does not
        define one of its compartments."""
        try:
            return registry.encode(label)
        except ValidationError as exc:
            folder = rel.split("/", 2)
            problem = files.FileProblem(
                f"{folder[0]}/{folder[1]}",
                f"label folder not read: {exc.message}; its files are read once the operator defines it",
            )
            if d := self._report(problem):
                drafts.append(d)
            return None

    def _render(
        self,
        extra: dict[str, tuple[str, int]] | None = None,
        mine: Changes | None = None,
        last: bool = False,
    ) -> dict[str, tuple[str, int]]:
        """Write every file the sidecar marked as touched (and ``extra`` ones) from the sidecar's rows.

        Returns the files edited by hand since the store last read them, left
        as they are (and still marked) for ``flush`` to merge.
        """

        marked, groups, known = self.db.operator(
            tables.untimed(), functools.partial(tables.marked_groups, extra=extra or {}), read_only=True
        )
        if not groups:
            return {}
        stats, gone, stale = [], [], {}
        for rel, (agent, code, label, memories) in sorted(groups.items()):
            try:
                result = self._write_file(rel, agent, label, memories, known.get(rel), mine, last)
            except replace.Changed:
                stale[rel] = (agent, code)
                continue
            if result is None:
                gone.append(rel)
            else:
                stats.append((rel, agent, code, *result, "ok"))
        done = [mark for rel, rel_marks in marked.items() if rel not in stale for mark in rel_marks]

        def record(tx: Tx[sqlite3.Connection]) -> None:
            tables.clear_marks(tx, done)
            tables.record_files(tx, gone, stats)

        self.db.operator(tables.untimed(), record)
        return stale

    def _render_rows(self, agent: str, label: Label, title: str, rows: list[tuple[Any, ...]]) -> str:
        """A file's text; each section's text is kept by its row, so a save re-renders one section, not all."""
        parts = []
        for row in sorted(rows, key=lambda r: (r[8] if r[6] in fmt.DAILY_CATEGORIES else 0, r[2])):
            text = self._sections.get(row)
            if text is None:
                text = fmt.render_section(row_with_context(row))
                self._cached += len(text)
                if self._cached > SECTION_CACHE_CHARS:
                    self._sections.clear()
                    self._cached = len(text)
                self._sections[row] = text
            parts.append(text)
        return fmt.header(agent, label, title) + "".join(parts)

    def _write_file(
        self,
        rel: str,
        agent: str,
        label: Label,
        memories: list[tuple[Any, ...]],
        known: tuple[Any, ...] | None,
        mine: Changes | None,
        last: bool,
    ) -> tuple[int, int, str | None] | None:
        """Render one file; raises ``replace.Changed`` when a hand edit since the last read is to be merged.

        A version on disk the store cannot merge (it does not parse, or no
        write's keys are known) is kept as a conflict copy as it is replaced.
        """
        title = fmt.place_of(rel).default_category or (memories[0][6] if memories else "")
        if title == "daily":
            title = rel.rsplit("/", 1)[-1][:-3]
        text = self._render_rows(agent, label, title, memories) if memories else None
        digest = files.digest_of(text) if text is not None else None
        try:
            on_disk = files.stat_of(self.root, rel)
            unread = known is None or known[3] != "ok"
            known_stamp, known_hash = (tuple(known[:2]), known[2]) if known is not None else (None, None)
            keep_old = None  # why the version on disk is kept as a conflict copy, if it is
            if rel in self._aside:
                self._aside.discard(rel)
                keep_old = "a hand edit of a memory this write changed"
            elif not unread and on_disk is not None and known_stamp == on_disk and known_hash == digest:
                return (*on_disk, digest)  # the file already says exactly this
            if on_disk is not None and not keep_old and (unread or known_stamp != on_disk):
                try:
                    _, disk_digest = files.read_text(self.root, rel, self.max_file_bytes)
                except files.FileProblem:
                    disk_digest = None
                if disk_digest is not None and disk_digest == digest:
                    return (*on_disk, digest)
                if disk_digest is None or unread or disk_digest != known_hash:
                    if mine is not None and disk_digest is not None and (known is None or not unread):
                        raise replace.Changed(rel)  # a readable hand edit: merged by flush
                    keep_old = "an unread version"
            folder = rel.split("/", 1)[0]
            if (
                text is not None
                and folder.startswith(fmt.LONG_PREFIX)
                and files.stat_of(self.root, f"{folder}/{fmt.AGENT_FILE}") is None
            ):
                files.write_agent_file(self.root, folder, agent)
            if text is not None:
                files.write_label_file(self.root, rel, label)
            done = replace.replace(
                self.root,
                rel,
                text,
                "any" if last else on_disk,
                hold=len(self._held) < MAX_HELD,
                keep_old=keep_old is not None,
            )
        except OSError as exc:
            raise StorageError(f"cannot write {rel} in the Markdown store: {exc}") from exc
        if done.old is not None:
            self._held.append(done.old)
        for i, kept in enumerate(done.kept):
            what = keep_old if keep_old and i == 0 else "an edit made while the store replaced it"
            self._report(files.FileProblem(rel, f"{what} was kept as {kept}"))
        return None if done.stamp is None else (*done.stamp, digest)


def _files_and_registry(tx: Tx[sqlite3.Connection]) -> tuple[tables.Known, Compartments]:
    """What ``md_files`` knows and the store's compartments, read in one snapshot."""
    return tables.known_files(tx), tables.registry(tx)
