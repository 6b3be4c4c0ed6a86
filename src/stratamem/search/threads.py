"""The process's worker threads for search by meaning: embedding a query, ranking the dense side.

A search hands the model and the numpy passes to these threads so they run while its own thread ranks
BM25 in SQLite (all three release the GIL). The pool is made again in a forked child, since threads do not
survive a fork.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_POOL: tuple[int, ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()


def pool() -> ThreadPoolExecutor:
    """This process's pool (at least two threads: a query's embedding and another search's dense ranking)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != os.getpid():
            workers = max(2, os.cpu_count() or 1)
            _POOL = (os.getpid(), ThreadPoolExecutor(workers, thread_name_prefix="stratamem-embed"))
        return _POOL[1]
