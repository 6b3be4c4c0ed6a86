"""The storage protocol every backend implements.

``Backend`` names the operations whose engine's own SQL or steps matter:
sessions, the memory operations, purge, bulk transfer, restoring a deleted
version. What is written once for every engine runs as a body through a seam
instead of being a method of its own: the turn's records, the audit log's reads
and appends, session limits and taint history, the console's reads
(``transactions``: ``read``, ``write``, ``operator``), the knowledge graph
(``graph``), and search by meaning's vectors (``vectors``). Each method that
acts for a session takes the session id and reads the session's taint *inside
its own transaction*, so a concurrent escalation in another process can never
slip a write below the live taint. Every write appends its audit event in the
same transaction as the change it records.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..audit import AuditDraft
from ..levels import Level
from ..models import AuditEvent, Hit, Memory, PurgeResult
from ..paging import ListQuery, Page
from ..scope import OWN, Conversations
from ..text import Analyzer
from .records import MemoryDraft, SearchRequest, SessionRecord, SessionRequest
from .sql.declassification import Order
from .sql.transcripts import TranscriptMessage, UsageRecord

if TYPE_CHECKING:
    from .transaction import Body
    from .vectors import Pending, VectorItem

T = TypeVar("T")


class TransactionSeam(Protocol):
    """The transactions that bodies written once for every backend run in, as ``transaction.Transactions``:
    the turn's records (``turn_store.py``), the audit log and sessions' operator records (``audit_store.py``,
    ``session_store.py``) and the console's reads (``sql/console.py``, in a read-only ``operator`` snapshot).

    ``append_audit`` records one event in a transaction of its own, committed before it returns: a read's
    (a read transaction appends nothing) and the runtime's records (policy decisions)."""

    def read(self, session_id: str, now: datetime, body: Body[Any, T]) -> T: ...
    def write(self, session_id: str, now: datetime, body: Body[Any, T]) -> T: ...
    def operator(self, now: datetime, body: Body[Any, T], *, read_only: bool = False) -> T: ...
    def append_audit(self, draft: AuditDraft, now: datetime) -> AuditEvent: ...
    def erase_deleted(self, tables: str) -> str:
        """After an operator transaction deleted rows of ``tables``: erase their bytes from the engine's files
        where that is a step of its own; what remains and how to finish, "" when nothing does."""
        ...


class GraphSeam(Protocol):
    """The transactions the knowledge graph runs in (``storage/graph_store.py``), bodies as ``transaction.Transactions``.

    Each backend wraps the body in its engine's own steps: PostgreSQL serialises one agent's graph
    writes on a key lock and takes the store lock for an operator act; the Markdown store applies
    pending hand edits first.
    """

    def write(self, session_id: str, now: datetime, body: Body[Any, T]) -> T:
        """``body`` in one session write; the event it appends commits with its change."""
        ...

    def read(self, session_id: str, now: datetime, body: Body[Any, tuple[T, AuditDraft]]) -> T:
        """``body`` in one session read; the event it returns is recorded in that transaction or right after it."""
        ...

    def operator(self, now: datetime, body: Body[Any, T]) -> T:
        """``body`` in one operator transaction (every row); the event it appends commits with its change."""
        ...


class VectorIndex(Protocol):
    """Search by meaning (``search/semantic.py``): the vectors of memory versions, made outside the write path."""

    def use_embedder(self, identity: str, reset: bool = False) -> None:
        """Record the store's embedder: vectors of another model (all, with ``reset``) become pending."""
        ...

    def pending_vectors(
        self, session_id: str, limit: int, now: datetime, conversations: Conversations = OWN
    ) -> list[Pending]:
        """Up to ``limit`` versions visible to the session still waiting for their vector."""
        ...

    def all_pending_vectors(self, limit: int) -> tuple[list[Pending], int]:
        """Up to ``limit`` versions waiting for their vector, of every agent, and how many wait in all."""
        ...

    def store_vectors(self, model: str, items: Sequence[VectorItem]) -> int:
        """Write (pending record, int8 codes, scale) items made by ``model``, each only if its memory is
        unchanged since it was read; how many were written."""
        ...


class Backend(Protocol):
    analyzer: Analyzer

    # sessions
    def open_session(self, request: SessionRequest, now: datetime) -> SessionRecord: ...
    def session_record(self, session_id: str) -> SessionRecord: ...
    def escalate(
        self, session_id: str, level: int, reason: str, source: str | None, now: datetime
    ) -> SessionRecord: ...

    # memories, always as seen by one session
    def save_many(self, session_id: str, drafts: Sequence[MemoryDraft], now: datetime) -> list[Memory]:
        """Every draft at the live taint read inside one transaction, one audit event each; all or nothing
        (a single save is a batch of one)."""
        ...

    # ``conversations``: the conversation scope of the read (``stratamem.scope``), part of the visible view
    def get(
        self, session_id: str, key: str, now: datetime, conversations: Conversations = OWN
    ) -> Memory | None: ...
    def list(
        self, session_id: str, query: ListQuery, now: datetime, conversations: Conversations = OWN
    ) -> Page: ...
    def search(self, session_id: str, request: SearchRequest, now: datetime) -> builtins.list[Hit]: ...
    def delete(self, session_id: str, key: str, now: datetime) -> Memory: ...

    # operator actions
    def purge(self, before: datetime, agent_id: str | None, now: datetime) -> PurgeResult:
        """Hard-delete, then erase the bytes from the files within a bounded wait, holding no lock meanwhile."""
        ...

    def export(self, agent_id: str | None, now: datetime) -> Iterator[Memory]: ...
    # memories and (optionally) the turn's records of the same export, in one transaction
    def import_memories(
        self, memories: Iterable[Memory], now: datetime, turns: Sequence[TranscriptMessage | UsageRecord] = ()
    ) -> int: ...

    # where shared bodies run: the turn's records (``storage/turn_store.py``), the audit log's reads and
    # appends (``audit_store.py``), session limits and taint history (``session_store.py``), the console's reads
    @property
    def transactions(self) -> TransactionSeam: ...

    # the operator console: restoring a soft-deleted version (row ``ref``) at or below ``clearance``
    # (its reads are bodies of ``sql/console.py`` run in a read-only ``transactions.operator`` snapshot)
    def restore_deleted(self, ref: int, clearance: Level, actor: str, now: datetime) -> Memory: ...

    # declassification: a new version at a lower label through the engine's own version writing, its
    # register row and audit event in one operator transaction (``sql/declassification.declassify_body``)
    def declassify(self, order: Order, now: datetime) -> tuple[Memory, int]: ...

    # whole-store copy (migration between backends): the rows that are the
    # store's truth, as (table, row-dict) pairs; derived indexes are rebuilt.
    def dump(self) -> Iterator[tuple[str, dict[str, Any]]]: ...
    def restore(self, rows: Iterable[tuple[str, dict[str, Any]]]) -> int: ...

    # the knowledge graph (``storage/graph_store.py`` runs the shared operations of
    # ``storage/sql/graph_read.py`` and ``graph_write.py`` as bodies through this seam)
    @property
    def graph(self) -> GraphSeam: ...

    # search by meaning (``search/semantic.py``): vectors made outside the write path
    @property
    def vectors(self) -> VectorIndex: ...

    def close(self) -> None: ...


if TYPE_CHECKING:  # mypy --strict holds every backend to the protocol, method by method
    import sqlite3

    import psycopg

    from .markdown.backend import MarkdownBackend
    from .postgres.backend import PostgresBackend
    from .sqlite.backend import SQLiteBackend
    from .transaction import Transactions

    _BACKENDS: tuple[type[Backend], ...] = (SQLiteBackend, PostgresBackend, MarkdownBackend)
    _SEAMS: tuple[type[Transactions[sqlite3.Connection]], ...] = (SQLiteBackend, MarkdownBackend)
    _PG_SEAM: type[Transactions[psycopg.Connection]] = PostgresBackend
