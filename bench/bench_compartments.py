"""What need-to-know costs search: memories spread over 8 compartments against the same memories without them.

Run: ``python bench/bench_compartments.py [--sizes 10000,100000] [--queries 200]``. For each size one
set of memories (SciFact sentences, ``bench_core.synthetic_memories``), memory ``i`` in compartment
``i % 8``, is imported into three SQLite stores:

- ``labelled``: every memory at PUBLIC under its one compartment; sessions whose taint holds 1 and 3 of
  the 8 compartments (they read 1/8 and 3/8 of the store);
- ``plain``: the same memories without compartments, read by a session that sees all of them (the store
  as it was before compartments: the price a deployment pays for turning them on);
- ``levels``: no compartments either, but the memories the compartment session may not read are at
  RESTRICTED and it reads at PUBLIC: the raw engine doing the same work (the same visible set, hidden by
  the level alone), the ratio that isolates the compartment test itself.

Each query runs on every side back to back (so a slow moment of the machine hits all alike), lexical and
hybrid (the deterministic ``hash`` embedder, vectors made by ``reindex`` before timing); p50/p95 in ms,
queries per second of one sequential client, and each side's p50 over the baseline's are printed.
``--explain`` prints SQLite's plan of the lexical ranking statement on the labelled store. Nothing here
asserts on time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core as core  # puts this checkout's src first

import stratamem as sm
from stratamem.labels import level_of

COMPARTMENTS = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7")
#: the taints measured: how many of the compartments the session has entered
WIDTHS = (1, 3)


def _fill(path: Path, memories: list[sm.Memory], code_of, mode: str) -> sm.Store:
    """A store holding ``memories`` under the labels ``code_of(i)`` gives, vectors made (hash embedder)."""
    store = sm.open_store(str(path), search_mode=mode, embedder="hash")
    codes = [code_of(i) for i in range(len(memories))]
    if any(code >= 4 for code in codes):  # a store without compartments defines none
        store.define_compartments(*COMPARTMENTS)
    labelled = [replace(m, level=level_of(c), label_code=c) for m, c in zip(memories, codes, strict=True)]
    store.import_memories(labelled, scan=False)
    store.reindex()
    return store


def _compartment_session(store: sm.Store, width: int) -> sm.Session:
    session = store.session("bench", compartments=COMPARTMENTS[:width])
    for name in COMPARTMENTS[:width]:
        session.enter(name, "bench")
    return session


def _read_through(path: Path) -> None:
    """Read a file once: a store written minutes earlier must not be timed against one just written."""
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def _time(run) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1e3


def bench(n: int, n_queries: int, explain: bool) -> list[dict]:
    memories = core.synthetic_memories(n)
    claims = [q for _, q in core.scifact_queries()[0]][:n_queries]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        load = time.perf_counter()
        labelled = _fill(Path(tmp) / "labelled.db", memories, lambda i: 1 << (2 + i % 8), "hybrid")
        plain = _fill(Path(tmp) / "plain.db", memories, lambda i: 0, "hybrid")
        print(
            f"  {n} memories: labelled and plain stores filled and embedded in {time.perf_counter() - load:.0f} s"
        )
        queries = [core._short(labelled.analyzer, q, 3) for q in claims]
        for width in WIDTHS:
            levels = _fill(
                Path(tmp) / f"levels{width}.db", memories, lambda i, w=width: 0 if i % 8 < w else 3, "hybrid"
            )
            sides = {
                "plain (sees all)": plain.session("bench"),
                "levels (same view)": levels.session("bench"),
                f"{width} compartment{'s' if width > 1 else ''}": _compartment_session(labelled, width),
            }
            for path in Path(tmp).glob("*.db*"):  # every side's pages in the OS cache alike, not the newest
                _read_through(path)
            for mode in ("lexical", "hybrid"):
                for q in queries[:20]:  # warm every side's caches
                    for s in sides.values():
                        s.search(q, mode=mode)
                times: dict[str, list[float]] = {name: [] for name in sides}
                for q in queries:
                    for name, s in sides.items():
                        times[name].append(_time(lambda s=s, q=q, m=mode: s.search(q, mode=m)))
                base = {name: core.pct(ts, 50) for name, ts in times.items()}
                for name, ts in times.items():
                    rows.append(
                        {
                            "n": n,
                            "mode": mode,
                            "side": name,
                            "p50": core.pct(ts, 50),
                            "p95": core.pct(ts, 95),
                            "qps": 1000 / statistics.mean(ts),
                            "vs plain": base[name] / base["plain (sees all)"],
                            "vs levels": base[name] / base["levels (same view)"],
                        }
                    )
            levels.close()
        if explain:
            _explain(labelled, queries[0])
        labelled.close()
        plain.close()
    return rows


def _explain(store: sm.Store, query: str) -> None:
    """SQLite's plan of the statements a lexical search runs on the labelled store (a 3-compartment taint)."""
    session = _compartment_session(store, 3)
    # the bench reads the engine's statements on this thread's read connection directly: not a product path
    conn = store.backend._readers.get()
    plans: list[str] = []
    conn.set_trace_callback(plans.append)
    session.search(query, mode="lexical")
    conn.set_trace_callback(None)
    for statement in plans:
        if not statement.lstrip().upper().startswith(("SELECT", "WITH")):
            continue
        print("\n  " + " ".join(statement.split())[:400])
        for row in conn.execute("EXPLAIN QUERY PLAN " + statement):
            print("    " + str(row[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--explain", action="store_true", help="print the lexical ranking's query plans")
    parser.add_argument("--data", type=Path, default=core.DATA, help="the shared data folder (SciFact)")
    args = parser.parse_args()
    core.DATA = args.data  # a worktree sits one level deeper than the main checkout
    print(f"machine: {core.machine()}")
    print(
        f"{len(COMPARTMENTS)} compartments, memory i in compartment i % 8; three-word SciFact queries, top 10"
    )
    rows = [row for n in map(int, args.sizes.split(",")) for row in bench(n, args.queries, args.explain)]
    print(
        f"\n  {'memories':>9} {'mode':>7} {'side':>20} {'p50 ms':>7} {'p95 ms':>7} {'qps':>6} "
        f"{'/plain':>7} {'/levels':>7}"
    )
    for r in rows:
        print(
            f"  {r['n']:>9} {r['mode']:>7} {r['side']:>20} {r['p50']:7.2f} {r['p95']:7.2f} {r['qps']:6.0f} "
            f"{r['vs plain']:6.2f}x {r['vs levels']:6.2f}x"
        )


if __name__ == "__main__":
    main()
