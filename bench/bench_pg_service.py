"""PostgreSQL at the size of a service: many agents, millions of memories, searches, concurrent saves, purge.

Run: ``python bench/bench_pg_service.py`` (``--memories 10000000 --agents 10000``, the issue's size;
``--pg URL`` for a server of yours, else an embedded one with PostgreSQL's default, durable settings).
On a small shared machine start smaller (``--memories 1000000``) and say so where the figures go.

What it does, in order, printing each figure as it comes:

1. Loads ``--memories`` over ``--agents`` agents, each agent's memories written by ``save_many`` in
   batches of ``--batch`` through its own session (the real write path: gate-free store calls, index
   upkeep, audit chain), from ``--load-writers`` threads; then ``VACUUM ANALYZE`` as autovacuum would.
   Every fourth agent also writes a tenth of its memories at CONFIDENTIAL, so the lattice has work.
2. Search latency p50/p95 (lexical BM25) for one agent alone, and for one agent reading ``--peers``
   peers, ``--searches`` queries each.
3. Save latency p50/p95 under ``--writers`` concurrent single-save writers (each its own agent).
4. Purge at this size: ``--delete`` memories soft-deleted across agents, then ``Store.purge`` (which ends
   with ``VACUUM FULL`` of the tables that held them, under an exclusive lock) — its wall time, the
   schema's size before and after, and the slowest search another thread ran meanwhile.

Texts are ``bench_scale``'s seeded Zipf vocabulary (8-24 words). Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from bench_postgres import settle, start_embedded
from bench_scale import MODE, pct, queries, vocabulary

import stratamem as sm
from stratamem.storage.postgres.connect import parse_url


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Texts:
    """Seeded synthetic texts, made per batch (10M strings at once would not fit in a small machine)."""

    def __init__(self) -> None:
        self.words = vocabulary()
        self.cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(self.words))))

    def batch(self, seed: int, n: int) -> list[str]:
        rng = random.Random(seed)
        return [
            " ".join(rng.choices(self.words, cum_weights=self.cumulative, k=rng.randint(8, 24)))
            for _ in range(n)
        ]


def table_bytes(url: str) -> dict[str, int]:
    """Each table's size with its indexes and TOAST, largest first."""
    config = parse_url(url)
    with psycopg.connect(config.conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT tablename, pg_total_relation_size(format('%%I.%%I', schemaname, tablename)) AS size "
            "FROM pg_tables WHERE schemaname = %s ORDER BY size DESC",
            (config.schema,),
        ).fetchall()
    return {name: int(size) for name, size in rows}


def schema_bytes(url: str) -> int:
    return sum(table_bytes(url).values())


def agent(i: int) -> str:
    return f"agent-{i:05d}"


def fill(url: str, memories: int, agents: int, batch: int, writers: int) -> None:
    per_agent = memories // agents
    texts = Texts()
    done = itertools.count()
    next_agent = itertools.count()
    lock = threading.Lock()
    start = time.perf_counter()
    written = [0]

    def work() -> None:
        with sm.open_store(url, search_mode=MODE) as store:
            while (i := next(next_agent)) < agents:
                session = store.session(agent(i))
                confidential = per_agent // 10 if i % 4 == 0 else 0
                public = per_agent - confidential
                for level, count in ((None, public), ("CONFIDENTIAL", confidential)):
                    if level:
                        session.escalate(level, "bench")
                    for first in range(0, count, batch):
                        size = min(batch, count - first)
                        contents = texts.batch(i * 1_000_003 + first + (7 if level else 0), size)
                        prefix = "c" if level else "m"
                        session.save_many(
                            [{"key": f"{prefix}{first + j}", "content": c} for j, c in enumerate(contents)]
                        )
                        with lock:
                            written[0] += size
                n = next(done) + 1
                if n % max(1, agents // 20) == 0:
                    rate = written[0] / (time.perf_counter() - start)
                    print(
                        f"  {n:,} agents, {written[0]:,} memories, {rate:,.0f}/s, load {load()}", flush=True
                    )

    threads = [threading.Thread(target=work) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    print(f"loaded {written[0]:,} memories in {elapsed:,.0f} s ({written[0] / elapsed:,.0f}/s)", flush=True)


def search_latency(store: sm.Store, session: sm.Session, qs: list[str]) -> tuple[float, float]:
    times = []
    for q in qs:
        start = time.perf_counter()
        session.search(q, 10)
        times.append((time.perf_counter() - start) * 1000)
    return pct(times, 0.5), pct(times, 0.95)


def save_latency(url: str, writers: int, saves: int, agents: int) -> tuple[float, float, float]:
    times: list[float] = []
    lock = threading.Lock()
    texts = Texts()
    barrier = threading.Barrier(writers)

    def work(w: int) -> None:
        with sm.open_store(url, search_mode=MODE) as store:
            session = store.session(agent((w * 997) % agents))
            contents = texts.batch(10_000_000 + w, saves)
            barrier.wait()
            for i, content in enumerate(contents):
                start = time.perf_counter()
                session.save(f"live-{w}-{i}", content)
                with lock:
                    times.append((time.perf_counter() - start) * 1000)

    start = time.perf_counter()
    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return pct(times, 0.5), pct(times, 0.95), len(times) / (time.perf_counter() - start)


def purge(url: str, store: sm.Store, deletes: int, agents: int, qs: list[str]) -> None:
    per = max(1, deletes // min(agents, 100))
    for a in range(min(agents, 100)):
        session = store.session(agent(a * max(1, agents // 100)))
        for k in range(per):
            session.delete(f"m{k}")
    before = schema_bytes(url)
    slowest = [0.0]
    stop = threading.Event()

    def reader() -> None:
        with sm.open_store(url, search_mode=MODE) as other:
            session = other.session(agent(agents - 1))
            for q in itertools.cycle(qs):
                if stop.is_set():
                    return
                t = time.perf_counter()
                session.search(q, 10)
                slowest[0] = max(slowest[0], (time.perf_counter() - t) * 1000)

    thread = threading.Thread(target=reader)
    thread.start()
    start = time.perf_counter()
    result = store.purge(before=store.now() + timedelta(seconds=1))
    elapsed = time.perf_counter() - start
    stop.set()
    thread.join()
    after = schema_bytes(url)
    print(
        f"purge: {int(result):,} records in {elapsed:,.1f} s (erased {result.erased}); schema "
        f"{before / 2**30:,.2f} GiB -> {after / 2**30:,.2f} GiB; slowest concurrent search {slowest[0]:,.0f} ms; "
        f"load {load()}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000_000)
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--load-writers", type=int, default=2)
    parser.add_argument("--peers", type=int, default=20)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--saves", type=int, default=100, help="single saves per writer")
    parser.add_argument("--delete", type=int, default=10_000, help="memories soft-deleted before the purge")
    parser.add_argument("--pg", help="a server URL (default: an embedded server)")
    args = parser.parse_args()
    base = args.pg or start_embedded()
    url = f"{base}{'&' if '?' in base else '?'}schema=service_{os.getpid()}"
    print(f"{args.memories:,} memories over {args.agents:,} agents; load {load()}", flush=True)
    fill(url, args.memories, args.agents, args.batch, args.load_writers)
    with sm.open_store(url, search_mode=MODE) as store:
        settle(store)
        sizes = table_bytes(url)
        print(f"schema size {sum(sizes.values()) / 2**30:,.2f} GiB", flush=True)
        print("  " + ", ".join(f"{name} {size / 2**20:,.0f} MiB" for name, size in list(sizes.items())[:8]))
        qs = queries(args.searches)
        alone = store.session(agent(1))
        p50, p95 = search_latency(store, alone, qs)
        print(
            f"search, one agent ({args.memories // args.agents:,} memories): p50 {p50:.1f} ms, p95 {p95:.1f} ms"
        )
        peers = tuple(agent(i) for i in range(2, 2 + args.peers))
        with_peers = store.session(agent(1), peers=peers)
        p50, p95 = search_latency(store, with_peers, qs)
        print(
            f"search, one agent + {args.peers} peers ({(args.peers + 1) * args.memories // args.agents:,} "
            f"memories): p50 {p50:.1f} ms, p95 {p95:.1f} ms; load {load()}",
            flush=True,
        )
        p50, p95, rate = save_latency(url, args.writers, args.saves, args.agents)
        print(
            f"save, {args.writers} writers: p50 {p50:.1f} ms, p95 {p95:.1f} ms, {rate:,.0f}/s; load {load()}"
        )
        purge(url, store, args.delete, args.agents, qs)


if __name__ == "__main__":
    main()
