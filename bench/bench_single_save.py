"""Single durable saves on SQLite against a bare FTS5 insert + commit of the same texts, in the same run.

Run: ``python bench/bench_single_save.py`` (``--n 5000 --rounds 3``). Each round times bare FTS5 and then
stratamem (lexical mode, a fresh store each) and prints saves per second and CPU time per save
(``time.process_time``: on a shared machine wall time mostly measures the wait for a core, CPU time what a
save costs) with the ratios, then the WAL pages each save commits, by table and index (the WAL is parsed
between two checkpoints; pages are named with ``dbstat``), and the load average at the start and end.
Texts are ``bench_scale``'s (seeded Zipf vocabulary, 8-24 words). Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import struct
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import bench_scale as scale

import stratamem as sm


def fts_run(path: str, items: list[str]) -> tuple[float, float]:
    """(saves per second, CPU seconds per save) of bare FTS5, one transaction per insert."""
    conn = scale.fts(path)
    cpu, wall = time.process_time(), time.perf_counter()
    for i, text in enumerate(items):
        conn.execute("BEGIN")
        conn.execute("INSERT INTO docs(key, content) VALUES (?, ?)", (f"k{i}", text))
        conn.execute("COMMIT")
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    conn.close()
    return len(items) / wall, cpu / len(items)


def ours_run(path: str, items: list[str]) -> tuple[float, float]:
    with sm.open_store(path, search_mode=scale.MODE) as store:
        s = store.session("bench")
        cpu, wall = time.process_time(), time.perf_counter()
        for i, text in enumerate(items):
            s.save(f"k{i}", text)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return len(items) / wall, cpu / len(items)


def wal_pages(wal: str) -> list[int]:
    """Page numbers of the frames in a WAL file, in order."""
    data = Path(wal).read_bytes()
    size = struct.unpack(">I", data[8:12])[0]
    return [struct.unpack(">I", data[at : at + 4])[0] for at in range(32, len(data) - size - 23, size + 24)]


def pages_per_save(path: str, items: list[str], warm: int, ours: bool) -> tuple[float, Counter[str]]:
    """WAL pages per save over ``items[warm:]``, after ``warm`` saves, with the names of their b-trees."""
    if ours:
        store = sm.open_store(path, search_mode=scale.MODE)
        s = store.session("bench")
        conn = store.backend._conn

        def save(i: int) -> None:
            s.save(f"k{i}", items[i])
    else:
        conn = scale.fts(path)

        def save(i: int) -> None:
            conn.execute("BEGIN")
            conn.execute("INSERT INTO docs(key, content) VALUES (?, ?)", (f"k{i}", items[i]))
            conn.execute("COMMIT")

    for i in range(warm):
        save(i)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for i in range(warm, len(items)):
        save(i)
    pages = wal_pages(path + "-wal")
    names = dict(sqlite3.connect(path).execute("SELECT pageno, name FROM dbstat"))
    if ours:
        store.close()
    else:
        conn.close()
    n = len(items) - warm
    return len(pages) / n, Counter({k: v / n for k, v in Counter(names.get(p, "?") for p in pages).items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=5_000, help="single saves timed per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    items = scale.texts(args.n, seed=3)
    print("load average at start:", os.getloadavg())
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            fts_rate, fts_cpu = fts_run(f"{tmp}/fts.db", items)
            rate, cpu = ours_run(f"{tmp}/ours.db", items)
        print(
            f"round {r}: bare FTS5 {fts_rate:,.0f}/s {fts_cpu * 1e6:.0f} us CPU | stratamem {rate:,.0f}/s "
            f"{cpu * 1e6:.0f} us CPU | ratio wall {fts_rate / rate:.2f}x, CPU {cpu / fts_cpu:.2f}x"
        )
    pages = scale.texts(2_500, seed=4)
    with tempfile.TemporaryDirectory() as tmp:
        bare, _ = pages_per_save(f"{tmp}/fts.db", pages, 2_000, ours=False)
        ours, by_tree = pages_per_save(f"{tmp}/ours.db", pages, 2_000, ours=True)
    print(
        f"WAL pages per save (500 saves after 2,000, folds included): stratamem {ours:.2f}, bare FTS5 {bare:.2f}"
    )
    for name, count in by_tree.most_common():
        print(f"  {name:24s} {count:.2f}")
    print("load average at end:", os.getloadavg())


if __name__ == "__main__":
    main()
