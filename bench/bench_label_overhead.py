"""Search at 1M memories before and after labels: is the figure unchanged within noise?

Labels (``stratamem.labels``) replaced every visibility test ``level <= :lvl`` by the label rule (three
conjuncts on the same column). This measures what that costs on a large store without compartments, against
the release before, in the same run: one store is built by the OLD sources, copied, the copy opened (and
upgraded in place) by the NEW sources, and the same queries are timed on each in alternating rounds, each
round in a fresh process, so load from the rest of the machine falls on both alike.

Run: ``python bench/bench_label_overhead.py --old-src /path/to/old/checkout/src --n 1000000``
(``--n 100000`` for a quick look). The old checkout is any earlier release's working tree.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NEW_SRC = HERE.parent / "src"


def _run(src: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, __file__, *args], env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def build(url: str, n: int) -> None:
    sys.path.insert(0, str(HERE))
    import bench_scale

    rate = bench_scale.batched(url, bench_scale.texts(n))
    print(json.dumps({"rate": rate}))


def search(url: str, count: int, seed: int) -> None:
    sys.path.insert(0, str(HERE))
    import bench_scale

    times = bench_scale.search(url, bench_scale.queries(count, seed=seed))
    print(json.dumps(times))


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--old-src", type=Path, help="the earlier release's src directory")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--keep", type=Path, help="build into (or reuse) this directory")
    parser.add_argument("--build", help=argparse.SUPPRESS)
    parser.add_argument("--search", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        return build(args.build, args.n)
    if args.search:
        return search(args.search, args.queries, args.seed)
    if args.old_src is None:
        parser.error("--old-src is required")
    work = args.keep or Path(tempfile.mkdtemp(prefix="label-overhead-"))
    work.mkdir(parents=True, exist_ok=True)
    old_db, new_db = work / "old.db", work / "new.db"
    if not old_db.exists():
        start = time.perf_counter()
        built = json.loads(_run(args.old_src, "--build", str(old_db), "--n", str(args.n)))
        print(
            f"built {args.n:,} memories with the old sources in {time.perf_counter() - start:.0f} s "
            f"({built['rate']:,.0f}/s)",
            flush=True,
        )
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{old_db}{suffix}").exists():
                shutil.copyfile(f"{old_db}{suffix}", f"{new_db}{suffix}")
    elif not new_db.exists():
        shutil.copyfile(old_db, new_db)
    results: dict[str, list[float]] = {"old": [], "new": []}
    rounds: dict[str, list[float]] = {"old": [], "new": []}
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for side in order:
            src, db = (args.old_src, old_db) if side == "old" else (NEW_SRC, new_db)
            times = json.loads(
                _run(src, "--search", str(db), "--queries", str(args.queries), "--seed", str(r))
            )
            results[side].extend(times)
            rounds[side].append(pct(times, 0.5))
        print(
            f"round {r + 1}: p50 old {rounds['old'][-1] * 1e3:.2f} ms, new {rounds['new'][-1] * 1e3:.2f} ms",
            flush=True,
        )
    print(
        f"\nsearch, {args.n:,} memories in one agent (3 words), {args.rounds} alternating rounds of "
        f"{args.queries} queries; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'':14}{'p50':>10}{'p95':>10}{'round p50s (median / min / max)':>38}")
    for side in ("old", "new"):
        per = rounds[side]
        print(
            f"{side:14}{pct(results[side], 0.5) * 1e3:>8.2f}ms{pct(results[side], 0.95) * 1e3:>8.2f}ms"
            f"{statistics.median(per) * 1e3:>16.2f} / {min(per) * 1e3:.2f} / {max(per) * 1e3:.2f} ms"
        )
    ratio = pct(results["new"], 0.5) / pct(results["old"], 0.5)
    spread = (max(rounds["old"]) - min(rounds["old"])) / statistics.median(rounds["old"])
    print(f"new / old p50: {ratio:.2f}x (the old side's own round-to-round spread: {spread:.0%})")


if __name__ == "__main__":
    main()
