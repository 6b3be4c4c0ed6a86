"""The Markdown backend: memory content in Markdown files people can read, edit, grep and keep in git.

``<dir>/<agent>/<LEVEL>/...md`` hold every live memory version (layout and
format: ``format``). Everything else — sessions, taint, the audit chain,
the search index, soft-deleted versions until purge, and whatever other
features keep in the SQLite backend — lives in the sidecar
``<dir>/.stratamem/index.db``, a plain ``SQLiteBackend`` this class composes.
Every operation runs on the sidecar; this class keeps the files and the
sidecar saying the same thing:

- Writes (save, delete, import, purge, restore, a console restore) take the directory lock
  (``flock``), apply pending hand edits, run on the sidecar (one transaction),
  then render the files they touched. Triggers on ``memories`` record which
  files a transaction touched in ``md_dirty`` *inside that transaction*, so a
  process killed between the commit and the file writes leaves a note the next
  opener (under the lock) finishes: nothing is lost or half-written.
- Hand edits are found by a cheap scan (size and mtime per file, then a hash)
  on open, before every write, and before reads at most every
  ``scan_interval`` seconds; ``reconcile`` applies them as audited operator acts.
- Without a sidecar, opening rebuilds it from the files (sessions and audit
  start empty: they never lived in the files).

Every ``Backend`` method is written out here (mypy holds the class to the
protocol): those that keep no content in the files go to the sidecar after
hand edits are applied, like every read. The sidecar is driven through its
public transaction seam (``read``/``write``/``operator``), never its internals.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ...audit import AuditDraft, operator_draft
from ...errors import StorageError
from ...levels import Level
from ...models import AuditEvent, Hit, Memory, PurgeResult, TaintEvent
from ...paging import ListQuery, Page
from ...private import make_private_dirs
from ...scope import OWN, Conversations
from ...text import Analyzer
from ..records import MemoryDraft, SessionRecord
from ..sql.audit_pages import AuditQuery
from ..sql.rows import MEMORY_COLUMNS, from_us, row_to_memory
from ..sql.transcripts import (
    TranscriptMessage,
    UsageRecord,
)
from ..sqlite.backend import SQLiteBackend
from ..transaction import Body, Tx
from ..vectors import Pending, QueryVector
from . import files, reconcile, replace, sidecar
from . import format as fmt

if TYPE_CHECKING:
    from ..vectors import VectorItem

T = TypeVar("T")
log = logging.getLogger("stratamem.markdown")

DAY_US = 86_400_000_000
SECTION_CACHE_CHARS = 32 * 1024 * 1024
Changes = dict[tuple[str, Level, str], tuple[Any, ...] | None]  # see CHANGES
_DAY = f"CASE WHEN {{r}}.category IN ('daily', 'conversation') THEN ({{r}}.created_us - (({{r}}.created_us % {DAY_US}) + {DAY_US}) % {DAY_US}) / {DAY_US} ELSE 0 END"
_MARK = "INSERT OR IGNORE INTO md_dirty VALUES ({r}.agent_id, {r}.level, {r}.category, " + _DAY + ");"
SCHEMA = [
    "CREATE TABLE IF NOT EXISTS md_files (path TEXT PRIMARY KEY, agent_id TEXT NOT NULL, level INTEGER NOT NULL, "
    "size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL, status TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS md_dirty (agent_id TEXT NOT NULL, level INTEGER NOT NULL, category TEXT NOT NULL, "
    "day INTEGER NOT NULL, PRIMARY KEY (agent_id, level, category, day)) WITHOUT ROWID",
    "CREATE TRIGGER IF NOT EXISTS md_dirty_insert AFTER INSERT ON memories BEGIN "
    + _MARK.format(r="NEW")
    + " END",
    "CREATE TRIGGER IF NOT EXISTS md_dirty_update AFTER UPDATE OF agent_id, key, level, content, tags, category, "
    "session_id, created_us, updated_us, lineage_id, expires_us, deleted_us ON memories BEGIN "
    + _MARK.format(r="OLD")
    + " "
    + _MARK.format(r="NEW")
    + " END",
    "CREATE TRIGGER IF NOT EXISTS md_dirty_delete AFTER DELETE ON memories BEGIN "
    + _MARK.format(r="OLD")
    + " END",
]


# Which memory keys one write changed, and the version each had before (None: none live), so that a
# hand edit landing while the write runs is merged around them. TEMP: on the write connection only.
_BEFORE = (
    "CASE WHEN OLD.deleted_us IS NULL THEN json_array(OLD.id, OLD.agent_id, OLD.key, OLD.level, OLD.content, "
    "OLD.tags, OLD.category, OLD.session_id, OLD.created_us, OLD.updated_us, OLD.lineage_id, OLD.expires_us) END"
)
CHANGES = [
    "CREATE TEMP TABLE IF NOT EXISTS md_changed (agent_id TEXT NOT NULL, level INTEGER NOT NULL, "
    "key TEXT NOT NULL, before TEXT, PRIMARY KEY (agent_id, level, key)) WITHOUT ROWID",
    "CREATE TEMP TRIGGER IF NOT EXISTS md_changed_insert AFTER INSERT ON main.memories BEGIN "
    "INSERT OR IGNORE INTO md_changed VALUES (NEW.agent_id, NEW.level, NEW.key, NULL); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS md_changed_update AFTER UPDATE OF agent_id, key, level, content, tags, "
    "category, session_id, created_us, updated_us, lineage_id, expires_us, deleted_us ON main.memories BEGIN "
    f"INSERT OR IGNORE INTO md_changed VALUES (OLD.agent_id, OLD.level, OLD.key, {_BEFORE}); "
    "INSERT OR IGNORE INTO md_changed VALUES (NEW.agent_id, NEW.level, NEW.key, NULL); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS md_changed_delete AFTER DELETE ON main.memories BEGIN "
    f"INSERT OR IGNORE INTO md_changed VALUES (OLD.agent_id, OLD.level, OLD.key, {_BEFORE}); END",
]
Marked = dict[str, list[tuple[Any, ...]]]  # file -> its md_dirty marks
Groups = dict[str, tuple[str, Level, list[tuple[Any, ...]]]]  # file -> (agent, level, its memory rows)
MERGE_ROUNDS = 8
MAX_HELD = 64  # replaced files kept open until the next scan (see ``replace.replace``)


def _untimed() -> datetime:
    """The context time of a sidecar transaction that appends no event (the store's clock is left alone)."""
    return datetime.now(UTC)


def _create_tables(tx: Tx[sqlite3.Connection]) -> None:
    for statement in [*SCHEMA, *CHANGES]:
        tx.conn.execute(statement)


def _take_changed(tx: Tx[sqlite3.Connection]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = tx.conn.execute(
        "SELECT agent_id, level, key, before FROM temp.md_changed"
    ).fetchall()
    tx.conn.execute("DELETE FROM temp.md_changed")
    return rows


def _known_files(tx: Tx[sqlite3.Connection]) -> dict[str, tuple[Any, ...]]:
    return {
        r[0]: r[1:]
        for r in tx.conn.execute("SELECT path, agent_id, level, size, mtime_ns, hash, status FROM md_files")
    }


class MarkdownBackend:
    """Implements ``storage.protocol.Backend`` on a directory of Markdown files plus a SQLite sidecar."""

    def __init__(
        self,
        root: str,
        analyzer: Analyzer,
        *,
        clock: Callable[[], datetime],
        synchronous: str = "NORMAL",
        max_content_bytes: int = 64 * 1024,
        max_file_bytes: int = files.DEFAULT_MAX_FILE_BYTES,
        scan_interval: float = 1.0,
    ) -> None:
        try:
            make_private_dirs(root)
            self.root = os.path.realpath(root)
            self._sidecar = os.path.join(self.root, fmt.SIDECAR_DIR)
            self._sidecar_fd = sidecar.open_sidecar(self.root)
        except OSError as exc:
            raise StorageError(f"cannot open the Markdown store at {root}: {exc}") from exc
        try:
            self._lock = sidecar.DirLock(self._sidecar_fd, self._sidecar)
        except BaseException:
            os.close(self._sidecar_fd)
            raise
        self.analyzer = analyzer
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
        try:
            with self._lock.held():
                self._check_sidecar(create=True)
                self.db = SQLiteBackend(sidecar.index_path(self.root), analyzer, synchronous=synchronous)
                self._check_sidecar()  # what SQLite opened by name is still the store's own
                self.db.operator(_untimed(), _create_tables)
                files.sweep_temporaries(self.root)
                self._settle()
        except BaseException:
            if "db" in self.__dict__:
                self.db.close()
            self._lock.close()
            os.close(self._sidecar_fd)
            raise

    # ------------------------------------------------------------------ keeping files and sidecar together

    def rescan(self) -> list[dict[str, Any]]:
        """Apply hand edits now; returns the problems this scan found (file, line, error)."""
        before = len(self.problems)
        with self._lock.held():
            self._settle()
        return self.problems[before:]

    def _check_sidecar(self, create: bool = False) -> None:
        """The sidecar folder and the files SQLite opens there by name are the store's own (lock held)."""
        sidecar.check_open(self._sidecar, self._sidecar_fd, create=create)

    def _settle(self) -> None:
        """Finish any interrupted render, then apply hand edits and render what they changed (lock held)."""
        self._release_held()
        self._check_sidecar()
        self._flush(None)
        restore = self._reconcile()
        self._flush({}, restore)
        self._last_scan = time.monotonic()

    def _release_held(self) -> None:
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
                    ),
                    None,
                )

    def _take_changes(self) -> Changes:
        """The keys the last write changed, each with the version it had before; starts a new record."""
        rows = self.db.operator(_untimed(), _take_changed)
        return {
            (agent, Level(level), key): tuple(json.loads(before)) if before is not None else None
            for agent, level, key, before in rows
        }

    def _flush(self, mine: Changes | None, extra: dict[str, tuple[str, Level]] | None = None) -> None:
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

    def _fresh(self) -> None:
        """Before a read: apply hand edits if the last scan is older than ``scan_interval``."""
        if time.monotonic() - self._last_scan >= self.scan_interval:
            with self._lock.held():
                self._settle()

    def _report(self, problem: files.FileProblem, level: Level | None) -> AuditDraft | None:
        key = (problem.path, problem.line, problem.reason)
        if key in self._reported:
            return None
        self._reported.add(key)
        self.problems.append(problem.as_dict())
        log.warning("markdown store: %s", problem)
        return operator_draft("markdown.error", outcome="error", detail=problem.as_dict())

    def _reconcile(self, keep: Changes | None = None) -> dict[str, tuple[str, Level]]:
        """Apply hand edits to the index (``keep``: keys a running write changed, whose index version wins)."""
        walk = files.walk(self.root)
        drafts = [d for p in walk.problems if (d := self._report(p, None))]
        known = self.db.operator(_untimed(), _known_files, read_only=True)
        stats, parsed, errors, removed = [], [], [], {}
        for rel, (size, mtime) in walk.files.items():
            old = known.get(rel)
            if old is not None and (old[2], old[3]) == (size, mtime):
                continue
            place = fmt.place_of(rel)
            agent = walk.agent_names[place.agent_dir]
            try:
                text, digest = files.read_text(self.root, rel, self.max_file_bytes)
            except files.FileProblem as exc:
                errors.append((rel, agent, place.level, size, mtime, "", exc))
                continue
            if old is not None and old[4] == digest:
                stats.append((rel, agent, int(place.level), size, mtime, digest, old[5]))
                continue
            try:
                sections = fmt.parse_file(text, self.max_content_bytes)
            except fmt.FormatError as exc:
                errors.append(
                    (
                        rel,
                        agent,
                        place.level,
                        size,
                        mtime,
                        digest,
                        files.FileProblem(rel, exc.reason, exc.line),
                    )
                )
                continue
            parsed.append((reconcile.Parsed(rel, agent, place, sections), size, mtime, digest))
        for rel, row in known.items():
            if rel not in walk.files:
                removed[rel] = (row[0], Level(row[1]))
        if not (stats or parsed or errors or removed or drafts):
            return {}

        def apply(tx: Tx[sqlite3.Connection]) -> reconcile.Outcome:
            conn = tx.conn
            outcome = reconcile.apply(self.db, conn, [p for p, *_ in parsed], removed, tx.now, keep or {})
            self._aside |= outcome.conflicts
            for rel, agent, level, size, mtime, digest, problem in errors:
                stats.append((rel, agent, int(level), size, mtime, digest, "error"))
                if d := self._report(problem, level):
                    drafts.append(d)
            for p, size, mtime, digest in parsed:
                status = "error" if p.rel in outcome.bad else "ok"
                stats.append((p.rel, p.agent, int(p.place.level), size, mtime, digest, status))
            for problem in outcome.problems:
                found = next((p.place.level for p, *_ in parsed if p.rel == problem.path), None)
                found = removed[problem.path][1] if problem.path in removed else found
                if d := self._report(problem, found):
                    drafts.append(d)
            conn.executemany("DELETE FROM md_files WHERE path = ?", [(rel,) for rel in removed])
            conn.executemany("INSERT OR REPLACE INTO md_files VALUES (?,?,?,?,?,?,?)", stats)
            for draft in [*drafts, *outcome.drafts]:
                tx.append(draft)
            return outcome

        outcome = self.db.operator(self.clock(), apply)
        return {rel: removed[rel] for rel in outcome.restore}

    def _render(
        self,
        extra: dict[str, tuple[str, Level]] | None = None,
        mine: Changes | None = None,
        last: bool = False,
    ) -> dict[str, tuple[str, Level]]:
        """Write every file the sidecar marked as touched (and ``extra`` ones) from the sidecar's rows.

        Returns the files edited by hand since the store last read them, left
        as they are (and still marked) for ``_flush`` to merge.
        """

        def marked_groups(tx: Tx[sqlite3.Connection]) -> tuple[Marked, Groups, dict[str, tuple[Any, ...]]]:
            conn = tx.conn
            marks = conn.execute("SELECT agent_id, level, category, day FROM md_dirty").fetchall()
            groups: Groups = {}
            marked: Marked = {}
            for agent, level, category, day in marks:
                rel = fmt.file_for(fmt.encode_segment(agent), Level(level), category, from_us(day * DAY_US))
                marked.setdefault(rel, []).append((agent, level, category, day))
                if rel not in groups:
                    groups[rel] = (agent, Level(level), self._group(conn, agent, level, category, day))
            for rel, (agent, level) in (extra or {}).items():
                if rel not in groups:
                    groups[rel] = (agent, level, self._group_of_file(conn, rel, agent, level))
            if not groups:
                return {}, {}, {}
            known = {}
            for rel in groups:
                row = conn.execute(
                    "SELECT size, mtime_ns, hash, status FROM md_files WHERE path = ?", (rel,)
                ).fetchone()
                if row is not None:
                    known[rel] = row
            return marked, groups, known

        marked, groups, known = self.db.operator(_untimed(), marked_groups, read_only=True)
        if not groups:
            return {}
        stats, gone, stale = [], [], {}
        for rel, (agent, level, memories) in sorted(groups.items()):
            try:
                result = self._write_file(rel, agent, level, memories, known.get(rel), mine, last)
            except replace.Changed:
                stale[rel] = (agent, level)
                continue
            if result is None:
                gone.append((rel,))
            else:
                stats.append((rel, agent, int(level), *result, "ok"))
        done = [mark for rel, rel_marks in marked.items() if rel not in stale for mark in rel_marks]

        def record(tx: Tx[sqlite3.Connection]) -> None:
            tx.conn.executemany(
                "DELETE FROM md_dirty WHERE agent_id = ? AND level = ? AND category = ? AND day = ?", done
            )
            tx.conn.executemany("DELETE FROM md_files WHERE path = ?", gone)
            tx.conn.executemany("INSERT OR REPLACE INTO md_files VALUES (?,?,?,?,?,?,?)", stats)

        self.db.operator(_untimed(), record)
        return stale

    @staticmethod
    def _group(
        conn: sqlite3.Connection, agent: str, level: int, category: str, day: int
    ) -> list[tuple[Any, ...]]:
        sql = (
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE agent_id = ? AND level = ? AND deleted_us IS NULL "
        )
        if category in fmt.DAILY_CATEGORIES:
            rows = conn.execute(
                sql + "AND category IN ('daily', 'conversation') AND created_us >= ? AND created_us < ?",
                (agent, level, day * DAY_US, (day + 1) * DAY_US),
            )
        else:
            rows = conn.execute(sql + "AND category = ?", (agent, level, category))
        found: list[tuple[Any, ...]] = rows.fetchall()
        return found

    @staticmethod
    def _group_of_file(conn: sqlite3.Connection, rel: str, agent: str, level: Level) -> list[tuple[Any, ...]]:
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE agent_id = ? AND level = ? AND deleted_us IS NULL",
            (agent, int(level)),
        )
        return [r for r in rows if reconcile.file_of(row_to_memory(r)) == rel]

    def _render_rows(self, agent: str, level: Level, title: str, rows: list[tuple[Any, ...]]) -> str:
        """A file's text; each section's text is kept by its row, so a save re-renders one section, not all."""
        parts = []
        for row in sorted(rows, key=lambda r: (r[8] if r[6] in fmt.DAILY_CATEGORIES else 0, r[2])):
            text = self._sections.get(row)
            if text is None:
                text = fmt.render_section(row_to_memory(row))
                self._cached += len(text)
                if self._cached > SECTION_CACHE_CHARS:
                    self._sections.clear()
                    self._cached = len(text)
                self._sections[row] = text
            parts.append(text)
        return fmt.header(agent, level, title) + "".join(parts)

    def _write_file(
        self,
        rel: str,
        agent: str,
        level: Level,
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
        text = self._render_rows(agent, level, title, memories) if memories else None
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
                        raise replace.Changed(rel)  # a readable hand edit: merged by _flush
                    keep_old = "an unread version"
            folder = rel.split("/", 1)[0]
            if (
                text is not None
                and folder.startswith(fmt.LONG_PREFIX)
                and files.stat_of(self.root, f"{folder}/{fmt.AGENT_FILE}") is None
            ):
                files.write_agent_file(self.root, folder, agent)
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
            self._report(files.FileProblem(rel, f"{what} was kept as {kept}"), level)
        return None if done.stamp is None else (*done.stamp, digest)

    # ------------------------------------------------------------------ the protocol
    # Writes take the directory lock and render their files (``_Writing``); reads apply hand edits first
    # (``_fresh``); both then run on the sidecar.

    # the transaction seam
    def read(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        self._fresh()
        return self.db.read(session_id, now, body)

    def write(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        with _Writing(self):
            return self.db.write(session_id, now, body)

    def operator(self, now: datetime, body: Body[sqlite3.Connection, T], *, read_only: bool = False) -> T:
        if read_only:
            self._fresh()
            return self.db.operator(now, body, read_only=True)
        with _Writing(self):
            return self.db.operator(now, body)

    # memories
    def save(self, session_id: str, draft: MemoryDraft, now: datetime) -> Memory:
        with _Writing(self):
            return self.db.save(session_id, draft, now)

    def save_many(self, session_id: str, drafts: Sequence[MemoryDraft], now: datetime) -> list[Memory]:
        with _Writing(self):
            return self.db.save_many(session_id, drafts, now)

    def delete(self, session_id: str, key: str, now: datetime) -> Memory:
        with _Writing(self):
            return self.db.delete(session_id, key, now)

    def import_memories(
        self, memories: Iterable[Memory], now: datetime, turns: Sequence[TranscriptMessage | UsageRecord] = ()
    ) -> int:
        with _Writing(self):
            return self.db.import_memories(memories, now, turns)

    def purge(self, before: datetime, agent_id: str | None, now: datetime) -> PurgeResult:
        with _Writing(self):
            return self.db.purge(before, agent_id, now)

    def restore(self, rows: Iterable[tuple[str, dict[str, Any]]]) -> int:
        with _Writing(self):
            return self.db.restore(rows)

    def get(
        self, session_id: str, key: str, now: datetime, conversations: Conversations = OWN
    ) -> Memory | None:
        self._fresh()
        return self.db.get(session_id, key, now, conversations)

    def list(
        self, session_id: str, query: ListQuery, now: datetime, conversations: Conversations = OWN
    ) -> Page:
        self._fresh()
        return self.db.list(session_id, query, now, conversations)

    def search(
        self,
        session_id: str,
        terms: Sequence[str] | None,
        limit: int,
        now: datetime,
        mode: str = "lexical",
        query: QueryVector | None = None,
        conversations: Conversations = OWN,
    ) -> builtins.list[Hit]:
        self._fresh()
        return self.db.search(session_id, terms, limit, now, mode, query, conversations)

    def export(self, agent_id: str | None, now: datetime) -> Iterator[Memory]:
        self._fresh()
        return self.db.export(agent_id, now)

    def dump(self) -> Iterator[tuple[str, dict[str, Any]]]:
        self._fresh()
        return self.db.dump()

    # What follows keeps no content in the files: the sidecar's, after hand edits are applied.

    # sessions
    def open_session(
        self,
        agent_id: str,
        session_id: str | None,
        clearance: Level | None,
        peers: Sequence[str] | None,
        now: datetime,
        owner: str | None = None,
    ) -> SessionRecord:
        self._fresh()
        return self.db.open_session(agent_id, session_id, clearance, peers, now, owner)

    def set_session_limits(
        self, session_id: str, clearance: Level | None, peers: Sequence[str] | None, now: datetime
    ) -> SessionRecord:
        self._fresh()
        return self.db.set_session_limits(session_id, clearance, peers, now)

    def session_record(self, session_id: str) -> SessionRecord:
        self._fresh()
        return self.db.session_record(session_id)

    def escalate(
        self, session_id: str, level: Level, reason: str, source: str | None, now: datetime
    ) -> SessionRecord:
        self._fresh()
        return self.db.escalate(session_id, level, reason, source, now)

    def taint_history(self, session_id: str) -> builtins.list[TaintEvent]:
        self._fresh()
        return self.db.taint_history(session_id)

    # shared bodies (the turn's records, the console's reads): hand edits applied first, then the sidecar's
    # own transactions (no file holds the turn's records)
    @property
    def transactions(self) -> _FreshSidecar:
        return _FreshSidecar(self)

    # the operator console
    def restore_deleted(self, ref: int, clearance: Level, actor: str, now: datetime) -> Memory:
        with _Writing(self):  # a memory comes back: its file is written like any save's
            return self.db.restore_deleted(ref, clearance, actor, now)

    # audit
    def append_audit(self, draft: AuditDraft, now: datetime) -> AuditEvent:
        self._fresh()
        return self.db.append_audit(draft, now)

    def audit_events(self, query: AuditQuery) -> builtins.list[AuditEvent]:
        self._fresh()
        return self.db.audit_events(query)

    def verify_audit(self, anchor: tuple[int, str] | None = None) -> int | None:
        self._fresh()
        return self.db.verify_audit(anchor)

    def audit_tip(self) -> tuple[int, str]:
        self._fresh()
        return self.db.audit_tip()

    # the knowledge graph: the sidecar's graph, hand edits applied first (no file holds it)
    @property
    def graph(self) -> _FreshGraph:
        return _FreshGraph(self)

    # search by meaning: the sidecar's vectors, hand edits applied first (no file holds them)
    @property
    def vectors(self) -> _FreshSidecar:
        return _FreshSidecar(self)

    def close(self) -> None:
        self._release_held()
        self.db.close()
        self._lock.close()
        if self._sidecar_fd >= 0:
            os.close(self._sidecar_fd)
            self._sidecar_fd = -1


class _FreshSidecar:
    """The sidecar's seam and vectors, each call after pending hand edits are applied
    (``MarkdownBackend.transactions`` and ``MarkdownBackend.vectors``)."""

    def __init__(self, backend: MarkdownBackend) -> None:
        self.backend = backend

    def read(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        self.backend._fresh()
        return self.backend.db.read(session_id, now, body)

    def write(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        self.backend._fresh()
        return self.backend.db.write(session_id, now, body)

    def operator(self, now: datetime, body: Body[sqlite3.Connection, T], *, read_only: bool = False) -> T:
        self.backend._fresh()
        return self.backend.db.operator(now, body, read_only=read_only)

    def append_audit(self, draft: AuditDraft, now: datetime) -> AuditEvent:
        """A read's event, recorded right after the read (which applied the hand edits)."""
        return self.backend.db.append_audit(draft, now)

    def erase_deleted(self, tables: str) -> str:
        return self.backend.db.erase_deleted(tables)

    def use_embedder(self, identity: str, reset: bool = False) -> None:
        self.backend._fresh()
        self.backend.db.vectors.use_embedder(identity, reset)

    def pending_vectors(
        self, session_id: str, limit: int, now: datetime, conversations: Conversations = OWN
    ) -> list[Pending]:
        self.backend._fresh()
        return self.backend.db.vectors.pending_vectors(session_id, limit, now, conversations)

    def all_pending_vectors(self, limit: int) -> tuple[list[Pending], int]:
        self.backend._fresh()
        return self.backend.db.vectors.all_pending_vectors(limit)

    def store_vectors(self, model: str, items: Sequence[VectorItem]) -> int:
        self.backend._fresh()
        return self.backend.db.vectors.store_vectors(model, items)


class _FreshGraph:
    """The sidecar's graph transactions, each after pending hand edits are applied (``MarkdownBackend.graph``)."""

    def __init__(self, backend: MarkdownBackend) -> None:
        self.backend = backend

    def write(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        self.backend._fresh()
        return self.backend.db.graph.write(session_id, now, body)

    def read(self, session_id: str, now: datetime, body: Body[sqlite3.Connection, tuple[T, AuditDraft]]) -> T:
        self.backend._fresh()
        return self.backend.db.graph.read(session_id, now, body)

    def operator(self, now: datetime, body: Body[sqlite3.Connection, T]) -> T:
        self.backend._fresh()
        return self.backend.db.graph.operator(now, body)


class _Writing:
    """A write: the directory lock, pending hand edits first, then the change, then its files."""

    def __init__(self, backend: MarkdownBackend) -> None:
        self.backend = backend
        self.held = backend._lock.held()

    def __enter__(self) -> None:
        self.held.__enter__()
        try:
            self.backend._settle()
            self.backend._take_changes()  # from here on, what changes is this write's
        except BaseException:
            self.held.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: Any) -> None:
        try:
            self.backend._flush(self.backend._take_changes())
        finally:
            self.held.__exit__(*exc)
