"""A server's idle embedder: pending vectors made in the background while no request arrives.

After an import or a burst of saves, the records wait for their vectors (saves never run the model, and a
search embeds only a bounded few first, ``semantic.CATCH_UP``). ``stratamem serve`` and ``stratamem mcp``
run one ``IdleEmbedder``: a daemon thread that, once the server has been quiet for ``quiet`` seconds
(no request began or ended; the transports call ``touch``), embeds a small batch of pending records,
and looks again. The batch is small (about 0.1 s of the model) so a request that arrives meanwhile shares
the cores with at most one batch; nothing a request waits for is held across batches (the model runs
outside any transaction, and the vectors are written in one short write through
``backend.vectors.store_vectors``, each only if its record is unchanged since it was read — the same path
a search's catch-up and ``reindex`` take, so the lattice and the audit hold alike).

``stop`` (on shutdown, before the store is closed) wakes the thread and waits for the batch in hand.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import StratamemError

if TYPE_CHECKING:
    from .semantic import SemanticIndex

log = logging.getLogger("stratamem.semantic")

BATCH = 16  # records a step embeds: about 0.1 s of MiniLM on LoCoMo-length texts
QUIET = 0.5  # seconds without a request before a step runs
POLL = 2.0  # seconds between looks when nothing waits
BACKOFF = 30.0  # seconds before trying again after a failure (model or store)


class IdleEmbedder:
    """Embeds a store's pending records in a daemon thread while its server is idle."""

    def __init__(
        self,
        semantic: SemanticIndex,
        *,
        batch: int = BATCH,
        quiet: float = QUIET,
        poll: float = POLL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._semantic = semantic
        self._batch = batch
        self._quiet = quiet
        self._poll = poll
        self._clock = clock
        self._last = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.embedded = 0  # records read and embedded so far (for logs and tests)

    def touch(self) -> None:
        """A request began or ended: the next step waits until the server has been quiet again."""
        self._last = self._clock()

    def idle_for(self) -> float:
        """Seconds the server still has to stay quiet before a step may run (0: now)."""
        return max(0.0, self._quiet - (self._clock() - self._last))

    def step(self) -> int:
        """One batch, if the server is idle: how many pending records were embedded (0: none, or busy)."""
        if self.idle_for() > 0:
            return 0
        done = self._semantic.embed_backlog(self._batch)
        self.embedded += done
        return done

    def start(self) -> None:
        """Start the thread (a store that searches lexically has nothing to embed: no thread)."""
        if self._thread is not None or self._semantic.mode == "lexical":
            return
        self._thread = threading.Thread(target=self._run, name="stratamem-idle-embed", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread, waiting (up to ``timeout``) for the batch in hand to be written."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.is_set():
            wait = self.idle_for()
            if wait > 0:
                self._stop.wait(wait)
                continue
            try:
                done = self.step()
            except StratamemError as exc:  # a model that cannot load, a store that refuses: say so, retry
                log.warning("background embedding paused for %.0f s: %s", BACKOFF, exc)
                self._stop.wait(BACKOFF)
                continue
            except Exception:  # anything else: logged whole; the thread must neither die nor stop the server
                log.exception("background embedding paused for %.0f s", BACKOFF)
                self._stop.wait(BACKOFF)
                continue
            if done == 0:
                self._stop.wait(self._poll)
