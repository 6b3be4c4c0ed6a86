"""A session: one agent's view of the store at a live taint.

The session holds no state of its own beyond its id: taint, clearance and
peers are read from storage on every operation, so an escalation made in
another process (or by the runtime) takes effect at once.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from .embed import EmbedderError
from .errors import ValidationError
from .labels import Label, compartment_name, outside_clearance
from .levels import Level
from .models import Hit, Memory, TaintEvent
from .paging import ListQuery, Page, decode_cursor
from .save_many import check_batch
from .scope import OWN, Conversations, check
from .search.expansion import FEEDBACK_HITS, expanded_weights
from .search.when import TIME_CANDIDATES, NamedTime, boosted, named_times, only_times, without_phrases
from .storage import session_store
from .storage.records import MemoryDraft, SearchRequest, SessionRecord
from .storage.sql.rows import to_us
from .validation import (
    MAX_RESULTS,
    check_category,
    check_content,
    check_context,
    check_id,
    check_key,
    check_occurred_at,
    check_tag,
    check_tags,
    check_text,
    check_time,
    check_ttl,
    clamp_max_results,
)

if TYPE_CHECKING:
    from .graph.api import GraphSession
    from .store import Store
    from .turn.runtime import Turn

MAX_QUERY_CHARS = 100_000
MAX_LIST_LIMIT = 100_000  # a Python caller's page; the surfaces' pages are far smaller (paging.MAX_PAGE_SIZE)


def _micros(moment: object, what: str) -> int | None:
    """A time filter as the store compares it (epoch microseconds), or None when not given."""
    return None if moment is None else to_us(check_time(moment, what))


M = TypeVar("M", bound=Memory)


class Session:
    def __init__(self, store: Store, session_id: str) -> None:
        self._store = store
        self._backend = store.backend
        self.id = session_id

    def __repr__(self) -> str:
        record = self.record
        return f"<Session {self.id} agent={record.agent_id} taint={record.taint.name}>"

    # live attributes --------------------------------------------------------
    @property
    def record(self) -> SessionRecord:
        return self._backend.session_record(self.id)

    @property
    def store(self) -> Store:
        return self._store

    @property
    def agent_id(self) -> str:
        return self.record.agent_id

    @property
    def taint(self) -> Level:
        return self.record.taint

    @property
    def clearance(self) -> Level:
        return self.record.clearance

    @property
    def compartments(self) -> frozenset[str]:
        """The compartments of the live taint: what every save is stored under, besides the level."""
        return self._store.compartments.names_of(self.record.taint_code)

    @property
    def label(self) -> Label:
        """The live taint as a label (level and compartments)."""
        record = self.record
        return Label(record.taint, self._store.compartments.names_of(record.taint_code))

    @property
    def clearance_label(self) -> Label:
        """The most the session may rise to: its clearance's level and the compartments it may enter."""
        record = self.record
        return Label(record.clearance, self._store.compartments.names_of(record.clearance_code))

    @property
    def peers(self) -> tuple[str, ...]:
        return self.record.peers

    @property
    def owner(self) -> str | None:
        """The server principal that created the session (``None``: the operator)."""
        return self.record.owner

    @property
    def taint_history(self) -> list[TaintEvent]:
        return session_store.taint_history(self._backend, self.id)

    @property
    def graph(self) -> GraphSession:
        """The session's view of the knowledge graph (same taint, agent and peers)."""
        from .graph.api import GraphSession

        return GraphSession(self)

    # taint ---------------------------------------------------------------------
    def escalate(self, level: Level | str, reason: str, source: str | None = None) -> Level:
        """Raise the taint to max(taint, level); above the clearance raises ClearanceError."""
        reason = check_text(reason, "reason")
        source = None if source is None else check_text(source, "source")
        return self._backend.escalate(self.id, Level.parse(level), reason, source, self._store.now()).taint

    def enter(self, compartment: str, reason: str, source: str | None = None) -> frozenset[str]:
        """Add a compartment to the taint (audited like an escalation; it never leaves it): from now on every
        save is stored under it too, and records under it become readable. A compartment the clearance
        does not include is refused with the same ``ClearanceError`` as a level above the clearance,
        whether or not the store defines it. Returns the taint's compartments."""
        name = compartment_name(compartment)
        reason = check_text(reason, "reason")
        source = None if source is None else check_text(source, "source")
        try:
            bits = self._store.compartments.mask([name]) << 2
        except ValidationError:  # not defined: outside every clearance, and no bit to record the ask under
            raise outside_clearance() from None
        # a defined compartment outside the clearance is refused by the backend, audited as an escalation is
        after = self._backend.escalate(self.id, Level.PUBLIC | bits, reason, source, self._store.now())
        return self._store.compartments.names_of(after.taint_code)

    def reset(self) -> Session:
        """The only way down: a new session (new id) at PUBLIC with no compartments, same agent, limits and
        owner."""
        record = self.record
        return self._store.session(
            record.agent_id,
            None,
            record.clearance,
            record.peers,
            owner=record.owner,
            compartments=self._store.compartments.names_of(record.clearance_code),
        )

    # memories ------------------------------------------------------------------
    def save(
        self,
        key: str,
        content: str,
        tags: Sequence[str] = (),
        category: str = "core",
        ttl: float | timedelta | None = None,
        *,
        occurred_at: datetime | str | None = None,
        context: str | None = None,
    ) -> Memory:
        """Save at the live taint. ``occurred_at``: when the thing happened (aware datetime or ISO 8601;
        default: now); ``context``: short text that situates the memory (the previous turn, a document's
        title), stored with it and used for its embedding, never returned as content."""
        key = check_key(key)
        content = check_content(content, self._store.max_content_bytes)
        draft_tags = check_tags(tags)
        category = check_category(category)
        seconds = check_ttl(ttl)
        occurred = check_occurred_at(occurred_at)
        situation = check_context(context)
        now = self._store.now()
        expires = now + timedelta(seconds=seconds) if seconds is not None else None
        draft = MemoryDraft(key, content, draft_tags, category, expires, occurred, situation)
        return self._named(self._backend.save_many(self.id, [draft], now)[0])

    def save_many(self, items: Sequence[Mapping[str, Any]]) -> list[Memory]:
        """Save a batch in one transaction: all of it or nothing, one audit event per record.

        Each item is a mapping of ``save``'s arguments (``key``, ``content``,
        optional ``tags``, ``category``, ``ttl``, ``occurred_at``, ``context``), validated as ``save``
        validates one; a bad item raises ``ValidationError`` naming its index
        (0-based) and nothing is written. Every record is written at the live
        taint read inside the transaction, as ``save`` does; a key given twice
        ends as the later item, as if saved one by one. At most the store's
        ``max_batch`` items (default 10,000).
        """
        checked = check_batch(items, self._store.max_batch, self._store.max_content_bytes)
        if not checked:
            return []
        now = self._store.now()
        return [
            self._named(m)
            for m in self._backend.save_many(self.id, [item.draft(now) for item in checked], now)
        ]

    def get(self, key: str, *, conversations: Conversations = OWN) -> Memory | None:
        """The highest visible version of ``key``; ``conversations``: the conversation scope (``scope.py``)."""
        found = self._backend.get(
            self.id, check_key(key), self._store.now(), conversations=check(conversations)
        )
        return None if found is None else self._named(found)

    def list(
        self,
        tag: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        *,
        category: str | None = None,
        saved_by: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        without_tag: str | None = None,
        without_category: str | None = None,
        conversations: Conversations = OWN,
        occurred_since: datetime | None = None,
        occurred_until: datetime | None = None,
    ) -> Page:
        """The visible, shadowed view in (agent order, key) order, filtered in the store.

        ``limit=None`` returns the whole view (a Python caller chooses that
        knowingly); every agent-, network- and terminal-facing surface passes
        a limit (``paging.DEFAULT_PAGE_SIZE``, at most ``paging.MAX_PAGE_SIZE``).
        The result is a list; ``result.next_cursor`` is the ``cursor`` for the
        next page, ``None`` on the last. ``since``/``until`` bound ``created_at``
        (inclusive), ``occurred_since``/``occurred_until`` bound ``occurred_at`` (inclusive, aware);
        ``saved_by`` is the saving session's id. ``conversations``:
        which conversation memories the view holds (``scope.py``; default: this
        session's own only).
        """
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ValidationError("limit must be a positive integer")
            limit = min(limit, MAX_LIST_LIMIT)
        if cursor is not None:
            decode_cursor(cursor)
        query = ListQuery(
            tag=None if tag is None else check_tag(tag),
            without_tag=None if without_tag is None else check_tag(without_tag),
            category=None if category is None else check_category(category),
            without_category=None if without_category is None else check_category(without_category),
            saved_by=None if saved_by is None else check_id(saved_by, "session id"),
            since_us=_micros(since, "since"),
            until_us=_micros(until, "until"),
            occurred_since_us=_micros(occurred_since, "occurred_since"),
            occurred_until_us=_micros(occurred_until, "occurred_until"),
            limit=limit,
            after=cursor,
        )
        page = self._backend.list(self.id, query, self._store.now(), conversations=check(conversations))
        return Page([self._named(m) for m in page], page.next_cursor)

    def recent(
        self,
        limit: int,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        without_tag: str | None = None,
        without_category: str | None = None,
        conversations: Conversations = OWN,
    ) -> builtins.list[Memory]:
        """The ``limit`` (clamped to 1..100) most recently updated visible memories created in [since, until]."""
        query = ListQuery(
            without_tag=None if without_tag is None else check_tag(without_tag),
            without_category=None if without_category is None else check_category(without_category),
            since_us=_micros(since, "since"),
            until_us=_micros(until, "until"),
            limit=clamp_max_results(limit),
            newest_first=True,
        )
        return [
            self._named(m)
            for m in self._backend.list(self.id, query, self._store.now(), conversations=check(conversations))
        ]

    def search(
        self,
        query: str,
        max_results: int = 10,
        mode: str | None = None,
        *,
        conversations: Conversations = OWN,
        unranked: Sequence[str] = (),
        expand: bool = False,
    ) -> builtins.list[Hit]:
        """Best first. ``mode``: ``lexical``, ``semantic`` or ``hybrid``; None = the store's mode.

        ``conversations``: which conversation memories the view holds (``scope.py``;
        default: this session's own only), statistics included.
        ``unranked``: words a filter of the caller already decides (LangGraph's namespace labels,
        written into keys and tags): the query's terms among theirs are left out of the lexical
        ranking, so they never score (the query is still embedded whole).
        A query that names a time ("in May", "last week", "2023", "yesterday": ``search/when.py``, relative
        to the store's clock) lifts the hits whose ``occurred_at`` falls in it — score times 1.5, capped at 1
        in hybrid and semantic mode — from a deeper candidate list; it never hides a hit of another time.
        """
        conversations = check(conversations)
        if not isinstance(query, str):
            raise ValidationError("query must be a string")
        limit = clamp_max_results(max_results)
        text = query[:MAX_QUERY_CHARS].encode("utf-8", "replace").decode("utf-8")
        # None asks for the most recent memories; an empty list (only punctuation) matches nothing.
        terms = None if text.strip() in ("", "*") else self._store.analyzer.query_terms(text)
        if isinstance(unranked, str) or not all(isinstance(word, str) for word in unranked):
            raise ValidationError("unranked must be a sequence of strings")
        now = self._store.now()
        times = named_times(text, now) if terms else []
        if times:
            rest = without_phrases(text, times)
            if only_times(self._store.analyzer.content_words(rest), times):
                return self._of_times(times, limit, conversations)
            # The words that named a time lift that time's hits instead of matching as words.
            terms = self._store.analyzer.query_terms(rest) or terms
        if terms and unranked:
            filtered, _ = self._store.analyzer.document_terms("", " ".join(unranked), ())
            terms = [term for term in terms if term not in filtered]
        # A named time reorders a deeper candidate list, then the answer is cut to the limit.
        depth = min(max(limit * 3, TIME_CANDIDATES), MAX_RESULTS) if times else limit
        request = SearchRequest(terms, depth, conversations=conversations)
        if terms is not None:
            semantic = self._store.semantic
            dense = semantic.prepare(self.id, text, mode, conversations)
            if dense is not None:
                chosen, vector = dense
                try:
                    return self._ranked(
                        replace(request, mode=chosen, query=vector), times, expand, limit, now
                    )
                except EmbedderError as exc:  # the query's embedding ran while the backend searched
                    if not semantic.failed(exc, mode):
                        raise
        return self._ranked(request, times, expand, limit, now)

    def _of_times(
        self, times: Sequence[NamedTime], limit: int, conversations: Conversations
    ) -> builtins.list[Hit]:
        """A query that asks only about times ("what happened last week?"): the visible memories that
        occurred then, unscored (0.0) as an empty query's are. Dates and spans are listed from the
        store in listing order; a month or weekday of any year is looked for among the
        ``MAX_RESULTS`` most recently updated memories (no index holds "every May")."""
        spans = [t for t in times if t.start is not None and t.end is not None]
        if len(spans) == len(times):
            memories: Sequence[Memory] = self.list(
                limit=MAX_RESULTS,
                occurred_since=min(t.start for t in spans if t.start is not None),
                occurred_until=max(t.end for t in spans if t.end is not None) - timedelta(microseconds=1),
                conversations=conversations,
            )
        else:
            request = SearchRequest(None, MAX_RESULTS, conversations=conversations)
            memories = [
                self._named(hit.memory) for hit in self._backend.search(self.id, request, self._store.now())
            ]
        return [Hit(m, 0.0) for m in memories if any(t.holds(m.occurred_at) for t in times)][:limit]

    def _ranked(
        self, request: SearchRequest, times: Sequence[NamedTime], expand: bool, limit: int, now: datetime
    ) -> builtins.list[Hit]:
        """The backend's answer to ``request``, expanded from its own top hits first when ``expand``,
        with the hits of a named time lifted, cut to ``limit``."""
        if expand and request.terms and request.mode != "semantic":  # ranking by meaning alone has no terms
            feedback = self._backend.search(self.id, replace(request, limit=FEEDBACK_HITS), now)
            analyzer = self._store.analyzer
            counts = analyzer.document_terms_many(
                (h.memory.key, h.memory.content, h.memory.tags) for h in feedback
            )
            weights = expanded_weights(
                request.terms, [(c, h.score) for (c, _), h in zip(counts, feedback, strict=True)]
            )
            request = replace(request, terms=list(weights), weights=weights)
        hits = [Hit(self._named(h.memory), h.score) for h in self._backend.search(self.id, request, now)]
        return boosted(hits, times, capped=request.mode != "lexical")[:limit]

    def delete(self, key: str) -> Memory:
        return self._named(self._backend.delete(self.id, check_key(key), self._store.now()))

    def _named(self, memory: M) -> M:
        """A record as handed out: its compartments by name (the store's registry)."""
        return self._store.compartments.named(memory)

    # the turn ------------------------------------------------------------------
    def turn(self, user_message: str, origin: str = "interactive", **options: Any) -> Turn:
        """Begin one agent turn in this session's store (``stratamem.turn.Turn``; options go to it).

        The returned turn has begun: ``turn.messages()`` is the prompt to send. Beginning it also
        saves ``user_message`` as a ``conversation`` memory when a person wrote it (autosave;
        ``settings=TurnSettings(autosave=AutosavePolicy(enabled=False))`` turns that off; docs/turns.md).
        """
        from .turn.runtime import Turn

        turn = Turn(self, origin, **options)
        turn.begin(user_message)
        return turn
