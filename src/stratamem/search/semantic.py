"""A store's search by meaning: which mode, which embedder, and keeping vectors caught up.

Saves never run the model (their latency is the lexical write alone): a
save marks its version's vector pending in the same transaction (on SQLite
once the store has recorded an embedder; recording the first one marks every
live version, ``sqlite_vectors.use_model``). Vectors are made (a) by a
search, for a few of the session's own visible pending records just before it
ranks — at most ``CATCH_UP`` of them and, past the first ``CATCH_UP_CHUNK``,
only while ``CATCH_UP_SECONDS`` of a monotonic clock last, so a search after a
big import stays fast; (b) by ``Store.reindex`` / ``stratamem reindex`` /
``stratamem import`` in bulk; (c) by a server's ``IdleEmbedder``
(``search.idle``) while no request arrives. Records still pending are found
by the lexical side meanwhile.

Default mode: ``hybrid`` when the store's languages have an embedder
installed (``semantic`` extra for English-only stores, ``multilingual`` for
any other language; ``embed.default_name``), else ``lexical``, and a
non-English store without the multilingual extra logs that it is lexical. If the default embedder fails to
load (missing or corrupt model file) a store whose mode was not chosen
explicitly logs the error once and answers lexically; a store or call that
asked for ``semantic``/``hybrid`` gets the ``EmbedderError``.

Latency: the query is embedded in a small persistent worker pool
(``search.threads``) while the backend ranks the lexical side (onnxruntime and
SQLite both release the GIL); the backend waits for the vector only when it
needs it (``storage.vectors.resolve``), and on SQLite ranks the dense side in
the same worker as soon as the vector is there (``storage.vectors.when_ready``). Query vectors are kept in a small LRU per
store keyed by (session, embedder identity, text): a vector depends on the
text alone, never on stored records, and keying by session means one
session's timing never tells whether another asked the same thing.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING

from .. import embed, tracing
from ..audit import AuditDraft
from ..embed import Embedder, EmbedderError, resolve
from ..errors import ValidationError
from ..scope import OWN, Conversations
from ..storage.vectors import DenseQuery, Pending, QueryEmbedding, QueryVector, VectorItem
from . import check_mode, threads

if TYPE_CHECKING:
    from ..store import Store

log = logging.getLogger("stratamem.semantic")  # the documented logger name
REINDEX_BATCH = 256
# A search's catch-up: the first chunk always (a session that searches often catches itself up), more only
# within the time budget; MiniLM embeds a chunk of LoCoMo-length texts in about 25 ms on this machine.
CATCH_UP = 32  # most pending visible records one search embeds
CATCH_UP_CHUNK = 4
CATCH_UP_SECONDS = 0.05
clock = time.monotonic  # read through the module, so tests can give the budget a clock of their own
QUERY_CACHE = 256  # query vectors kept per store (about 2 KB each)


class SemanticIndex:
    def __init__(self, store: Store, embedder: object, mode: str | None) -> None:
        self._store = store
        self._spec = embedder
        self._embedder: Embedder | None = None
        self._loaded = False
        self._queries: OrderedDict[tuple[str, str, str], DenseQuery] = OrderedDict()
        self._queries_lock = threading.Lock()
        mode = mode if mode is not None else (os.environ.get("STRATAMEM_SEARCH_MODE") or None)
        self._explicit = mode is not None
        langs = store.analyzer.languages
        if embedder == "default":
            likely = embed.default_name(langs) is not None
            if not likely and not embed.english_only(langs):
                log.info(
                    "no multilingual embedder for languages %s: search is lexical; %s",
                    ", ".join(langs),
                    embed.missing_extra(langs),
                )
        else:
            likely = embedder not in (None, "none")
        self.mode = check_mode(mode) if mode is not None else ("hybrid" if likely else "lexical")
        if self.mode != "lexical" and not likely:
            raise ValidationError(
                f"search_mode={self.mode!r} needs an embedder: {embed.missing_extra(langs)}, or pass embedder= "
                "('minilm', 'e5' or an Embedder)"
            )

    @property
    def embedder(self) -> Embedder | None:
        """Loaded on first use (a lexical-only command never pays for the model)."""
        if not self._loaded:
            embedder = resolve(self._spec, self._store.analyzer.languages)  # a failure is retried next time
            if embedder is not None:
                self._store.backend.vectors.use_embedder(embedder.identity)
            self._embedder, self._loaded = embedder, True
        return self._embedder

    @property
    def loaded(self) -> bool:
        """Whether the embedder has been loaded (without loading it): the server's readiness."""
        return self._loaded and self._embedder is not None

    def _require(self) -> Embedder:
        embedder = self.embedder
        if embedder is None:
            raise ValidationError(
                f"semantic search needs an embedder: {embed.missing_extra(self._store.analyzer.languages)}"
            )
        return embedder

    def prepare(
        self, session_id: str, text: str, mode: str | None, conversations: Conversations = OWN
    ) -> tuple[str, QueryVector] | None:
        """For a semantic or hybrid search: catch up the session's pending vectors, start embedding the query.

        ``conversations``: the search's conversation scope — the records caught up are those of its view.

        None means "search lexically" (lexical mode, or a defaulted mode whose model cannot load).
        The query vector may still be computing (a ``Future``); an error it raises later is
        handled by ``failed``.
        """
        chosen = self.mode if mode is None else check_mode(mode)
        if chosen == "lexical":
            return None
        try:
            embedder = self._require()
            # The query's embedding starts first (in a worker) and the check for pending records runs
            # meanwhile; documents are embedded only once the query's embedding is over, so this search
            # never calls the embedder from two threads at once.
            vector = self._query_vector(embedder, session_id, text)
            self.catch_up(session_id, embedder, after=vector, conversations=conversations)
        except EmbedderError as exc:
            if self.failed(exc, mode):
                return None
            raise
        return chosen, vector

    def failed(self, exc: EmbedderError, mode: str | None) -> bool:
        """True when a search whose model failed should be answered lexically (the mode was defaulted)."""
        if mode is None and not self._explicit:
            log.error("search by meaning is unavailable, answering lexically: %s", exc.message)
            self.mode = "lexical"
            return True
        return False

    def _query_vector(self, embedder: Embedder, session_id: str, text: str) -> QueryVector:
        key = (session_id, embedder.identity, text)
        with self._queries_lock:
            hit = self._queries.get(key)
            if hit is not None:
                self._queries.move_to_end(key)
                return hit
        floor = float(getattr(embedder, "min_similarity", 0.0))

        def embed() -> DenseQuery:
            with tracing.span("stratamem.embedding", {"stratamem.texts": 1}):
                vector = embedder.embed_query(text)
            if getattr(vector, "shape", None) != (embedder.dim,):
                raise EmbedderError(
                    f"the embedder returned a query vector of shape {getattr(vector, 'shape', None)}, "
                    f"expected ({embedder.dim},): dimension mismatch"
                )
            query = DenseQuery.make(embedder.identity, vector, floor)
            query.codes.setflags(write=False)
            with self._queries_lock:
                self._queries[key] = query
                while len(self._queries) > QUERY_CACHE:
                    self._queries.popitem(last=False)
            return query

        future: Future[DenseQuery] = threads.pool().submit(tracing.in_context(embed))
        return QueryEmbedding(embedder.identity, embedder.dim, future)

    def catch_up(
        self,
        session_id: str,
        embedder: Embedder,
        after: QueryVector | None = None,
        conversations: Conversations = OWN,
    ) -> int:
        """Embed a bounded few of the session's visible pending records, once ``after`` (a query still
        embedding) is done: a chunk of ``CATCH_UP_CHUNK``, then more chunks while ``CATCH_UP_SECONDS``
        last, never more than ``CATCH_UP``. The rest wait for the idle embedder or a reindex; the lexical
        side finds them meanwhile."""
        backend = self._store.backend
        pending = backend.vectors.pending_vectors(session_id, CATCH_UP, self._store.now(), conversations)
        if not pending:
            return 0
        if isinstance(after, QueryEmbedding):
            wait([after.future])  # its error, if any, is the search's to raise
        deadline = clock() + CATCH_UP_SECONDS
        items: list[VectorItem] = []
        for start in range(0, len(pending), CATCH_UP_CHUNK):
            if start and clock() >= deadline:
                break
            items += self._vectors(embedder, pending[start : start + CATCH_UP_CHUNK])
        return backend.vectors.store_vectors(embedder.identity, items)

    def embed_backlog(self, limit: int) -> int:
        """Embed up to ``limit`` pending records of any agent (the idle embedder's step); how many were read.

        0 when nothing waits or the store has no embedder. Written through ``store_vectors`` like every
        vector, each only if its record is unchanged since it was read.
        """
        embedder = self.embedder
        if embedder is None:
            return 0
        batch, _ = self._store.backend.vectors.all_pending_vectors(limit)
        self._embed(embedder, batch)
        return len(batch)

    def _embed(self, embedder: Embedder, pending: list[Pending]) -> int:
        if not pending:
            return 0
        return self._store.backend.vectors.store_vectors(embedder.identity, self._vectors(embedder, pending))

    @staticmethod
    def _vectors(embedder: Embedder, pending: list[Pending]) -> list[VectorItem]:
        with tracing.span("stratamem.embedding", {"stratamem.texts": len(pending)}):
            vectors = embedder.embed_documents([p.text for p in pending])
        if vectors.shape != (len(pending), embedder.dim):
            raise EmbedderError(
                f"the embedder returned shape {vectors.shape}, expected ({len(pending)}, "
                f"{embedder.dim}): dimension mismatch"
            )
        from .dense import quantise

        return [(p, *quantise(v)) for p, v in zip(pending, vectors, strict=True)]

    def reindex(self, progress: Callable[[int, int], None] | None, force: bool) -> int:
        embedder = self._require()
        backend = self._store.backend
        backend.vectors.use_embedder(embedder.identity, reset=force)
        done = 0
        batch, total = backend.vectors.all_pending_vectors(REINDEX_BATCH)
        while batch:
            written = self._embed(embedder, batch)
            done += len(batch)
            if progress:
                progress(min(done, total), total)
            if written == 0:
                break  # every record of the batch changed meanwhile; the next search or reindex takes them
            batch, _ = backend.vectors.all_pending_vectors(REINDEX_BATCH)
        self._store.audit(
            AuditDraft("reindex", detail={"embedded": done, "model": embedder.identity, "force": bool(force)})
        )
        return done
