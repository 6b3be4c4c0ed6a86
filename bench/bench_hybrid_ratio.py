"""Hybrid against lexical search, query by query, in one process: the ratio the 2x target is about.

Run: ``python bench/bench_hybrid_ratio.py STORE [--tree DIR]``. STORE is a store with vectors made by the
model, e.g. the one ``bench_semantic.py --fill model --sizes 100000 --keep DIR`` keeps
(``DIR/lat100000-model.db``). For each distinct three-word query (SciFact claims shortened as
``bench_semantic`` does) one lexical search and one hybrid search run back to back, each in its own
session, so a slow moment of the machine hits both sides alike; the p50 of each and their ratio are
printed. ``--tree`` runs another checkout (e.g. a worktree of an older commit: its ``bench_core`` puts its
own ``src`` first) on the same store, which is how before and after were alternated in one sitting for
the README. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", help="a store with model vectors (see bench_semantic.py --keep)")
    parser.add_argument("--tree", help="the checkout to run (default: this one)")
    parser.add_argument("--queries", type=int, default=800)
    parser.add_argument(
        "--expand", action="store_true", help="hybrid with query expansion (search(expand=True))"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.tree) / "bench") if args.tree else str(HERE))
    import bench_core as core  # puts its checkout's src first

    import stratamem as sm

    store = sm.open_store(args.store, search_mode="hybrid", embedder="minilm")
    claims = [q for _, q in core.scifact_queries()[0]][: args.queries]
    queries = list(dict.fromkeys(core._short(store.analyzer, q, 3) for q in claims))
    warm = store.session("bench")
    for q in claims[-20:]:
        warm.search(q)
        warm.search(q, mode="lexical")
    lexical_session, hybrid_session = store.session("bench"), store.session("bench")
    lexical, hybrid = [], []
    for q in queries:
        start = time.perf_counter()
        lexical_session.search(q, mode="lexical")
        lexical.append(time.perf_counter() - start)
        start = time.perf_counter()
        hybrid_session.search(q, expand=True) if args.expand else hybrid_session.search(q)
        hybrid.append(time.perf_counter() - start)
    lex, hyb = statistics.median(lexical) * 1e3, statistics.median(hybrid) * 1e3
    print(
        f"{sm.__file__}: {len(queries)} three-word queries, p50 lexical {lex:.2f} ms, hybrid {hyb:.2f} ms, "
        f"hybrid{'+expansion' if args.expand else ''}/lexical {hyb / lex:.2f}x"
    )
    store.close()


if __name__ == "__main__":
    main()
