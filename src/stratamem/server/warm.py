"""What a server process loads before it answers anyone, so no client's first call waits for it."""

from __future__ import annotations

import contextlib

from ..policy.redact import redact_secrets
from ..store import Store


def warm_up(store: Store, model: bool = True) -> None:
    """Load now what a process's first call would otherwise load under a client's timeout: the credential
    scrubber every answer and event passes (detect-secrets' detectors, about 0.1 s) and, with search by
    meaning and ``model``, the model (0.6 s and more). Each worker calls it before it answers anything, the
    stdio server before it reads its first message, and the HTTP server before it listens — without the
    model when workers run the memory searches: its process then searches only for the turn API's recall
    and loads its copy of the model on first use.

    A model that fails to load is left for the first search to report, as if nothing had been loaded.
    """
    redact_secrets("warm up")
    if not model or store.semantic.mode == "lexical":
        return
    with contextlib.suppress(Exception):
        embedder = store.semantic.embedder
        if embedder is not None:
            embedder.embed_query("warm up")
