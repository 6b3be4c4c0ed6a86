"""Copy a whole store between backends: ``stratamem migrate --from URL --to URL``.

Every backend can ``dump`` the rows that are its truth — sessions with their
taint, taint events, every memory version including soft-deleted ones, the
audit log and its head — in one shared row format, and ``restore`` them into an
empty store, rebuilding the derived indexes there. Copying is therefore
lossless in both directions, and the audit chain verifies the same afterwards
(it hashes the same fields; nothing is re-sealed). The copy is then checked —
row counts per table and the audit chain — and recorded on the target with
one ``migrate`` event appended to the chain.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .audit import operator_draft
from .errors import StorageError, ValidationError
from .extras import require
from .storage.markdown import sidecar
from .storage.sql.rows import one_row
from .store import MARKDOWN_SCHEME, Store, markdown_location, sqlite_path


def _is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def _kind(url: str) -> str:
    return "postgresql" if _is_postgres(url) else "markdown" if url.startswith(MARKDOWN_SCHEME) else "sqlite"


def _sqlite_file(url: str) -> str:
    """The SQLite file that holds a store's meta: the store itself, or a Markdown store's sidecar.

    A Markdown store's sidecar is checked first: a link there is refused, never read through.
    """
    if url.startswith(MARKDOWN_SCHEME):
        root = os.path.realpath(markdown_location(url)[0])
        if os.path.isdir(root):
            sidecar.check_sidecar(root)
        return sidecar.index_path(root)
    return sqlite_path(url)


def stored_languages(url: str) -> tuple[str, ...] | None:
    """The stemming languages a store was built with, read without opening it as a Store.

    Opening a store with other languages than its own re-stems it, so the
    source must be opened with exactly the languages it already has.
    """
    if _is_postgres(url):
        require("postgres")
        import psycopg
        from psycopg import sql

        from .storage.postgres.connect import parse_url

        config = parse_url(url)
        try:
            with psycopg.connect(config.conninfo, autocommit=True) as conn:
                if not one_row(
                    conn.execute(
                        "SELECT to_regclass(%s) IS NOT NULL", (f'"{config.schema}".meta',)
                    ).fetchone()
                )[0]:
                    return None
                row = conn.execute(
                    sql.SQL("SELECT value FROM {}.meta WHERE name = 'languages'").format(
                        sql.Identifier(config.schema)
                    )
                ).fetchone()
        except psycopg.Error as exc:
            raise StorageError(f"cannot read the source store: {exc}") from exc
    else:
        path = _sqlite_file(url)
        if path == ":memory:":
            return None
        try:
            lite = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
            try:
                row = lite.execute("SELECT value FROM meta WHERE name = 'languages'").fetchone()
            finally:
                lite.close()
        except sqlite3.Error:
            return None
    return tuple(json.loads(row[0])) if row else None


def _check_source(url: str) -> None:
    if url.startswith(MARKDOWN_SCHEME):
        if not Path(markdown_location(url)[0]).is_dir():
            raise ValidationError(f"no store to migrate from at {url!r}")
    elif not _is_postgres(url):
        path = sqlite_path(url)
        if path == ":memory:" or not Path(path).exists():
            raise ValidationError(f"no store to migrate from at {url!r}")


def _counted(
    rows: Iterable[tuple[str, dict[str, Any]]], counts: Counter[str]
) -> Iterator[tuple[str, dict[str, Any]]]:
    for table, row in rows:
        counts[table] += 1
        yield table, row


def migrate(
    from_url: str,
    to_url: str,
    *,
    languages: Sequence[str] | None = None,
    progress: Callable[[Iterator[tuple[str, dict[str, Any]]]], Iterator[tuple[str, dict[str, Any]]]]
    | None = None,
) -> int:
    """Copy every row of the store at ``from_url`` into the empty store at ``to_url``; returns the rows copied.

    Raises ``ValidationError`` when the source is missing or the target not
    empty, ``StorageError`` when the copy does not check out (nothing is left
    half-copied: the restore is one transaction).
    """
    if from_url == to_url:
        raise ValidationError("--from and --to name the same store")
    _check_source(from_url)
    langs = tuple(languages or stored_languages(from_url) or ("english",))
    source = Store(from_url, languages=langs)
    try:
        target = Store(to_url, languages=langs)
    except BaseException:
        source.close()
        raise
    try:
        sent: Counter[str] = Counter()
        rows = _counted(source.backend.dump(), sent)
        copied = target.backend.restore(progress(rows) if progress else rows)
        landed = Counter(table for table, _ in target.backend.dump())
        if landed != sent:
            raise StorageError(f"the copy is incomplete: sent {dict(sent)}, the target holds {dict(landed)}")
        bad = target.verify_audit()
        if bad is not None:
            raise StorageError(f"the copied audit log does not verify (first bad sequence {bad})")
        target.audit(
            operator_draft(
                "migrate",
                detail={
                    "rows": copied,
                    "from": _kind(from_url),
                    "tables": {table: n for table, n in sorted(sent.items()) if table != "meta"},
                },
            )
        )
        return copied
    finally:
        source.close()
        target.close()
