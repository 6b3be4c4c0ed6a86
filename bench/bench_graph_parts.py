"""Where a bulk graph build's CPU goes: bench_graph's 10k workload in process, CPU per write by part.

Run: ``python bench/bench_graph_parts.py`` (about 15 s idle). The build is ``bench_graph``'s bulk row
(``create_entities`` calls of 100 entities with two 8-word observations, then ``create_relations`` calls of
300) through ``tools.execute``; each part is timed with this thread's CPU clock around the function that
does it: the graph's SQL (``GraphConn``), the index's text analysis (``Analyzer.document_terms``), the
poisoning scanner (``guards.scan_all``) and the audit seal. What is left is the tool layer, the policy
decisions and the commits. Nothing here asserts on time.
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_graph as bg

import stratamem as sm
from stratamem import text
from stratamem.policy import guards
from stratamem.storage.sql import graph_read
from stratamem.storage.sqlite import backend as sqlite_backend
from stratamem.tools import execute

spent: dict[str, float] = collections.defaultdict(float)


def timed(owner: Any, name: str, label: str) -> None:
    """Replace ``owner.name`` by a wrapper adding its CPU time to ``spent[label]``."""
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[label] += time.thread_time() - start

    setattr(owner, name, wrapper)


def main() -> None:
    timed(guards, "scan_all", "poisoning scanner")
    timed(text.Analyzer, "document_terms", "text analysis")
    timed(sqlite_backend, "seal_many", "audit seal")
    for name in ("rows", "one", "run", "many"):
        timed(graph_read.GraphConn, name, "graph SQL")
    w = bg.Workload(10_000)
    with sm.open_store(os.path.join(tempfile.mkdtemp(), "graph.db")) as store:
        session = store.session("bench")
        began, wall = time.thread_time(), time.perf_counter()
        for chunk in bg.batches(w.entities, bg.ENTITY_BATCH):
            execute(session, "create_entities", {"entities": chunk})
        entities_done = time.thread_time()
        per_entity = dict(spent)
        spent.clear()
        for chunk in bg.batches(w.relations, bg.RELATION_BATCH):
            execute(session, "create_relations", {"relations": chunk})
        done, wall = time.thread_time(), time.perf_counter() - wall
    print(f"load average {os.getloadavg()}")
    print(f"build {wall:.1f} s wall, {done - began:.1f} s CPU")
    print(f"entity (two observations): {(entities_done - began) / len(w.entities) * 1e6:.0f} us CPU")
    for label, seconds in sorted(per_entity.items()):
        print(f"  {label:20s} {seconds / len(w.entities) * 1e6:6.0f} us")
    print(f"relation: {(done - entities_done) / len(w.relations) * 1e6:.0f} us CPU")
    for label, seconds in sorted(spent.items()):
        print(f"  {label:20s} {seconds / len(w.relations) * 1e6:6.0f} us")


if __name__ == "__main__":
    main()
