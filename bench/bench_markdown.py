"""Markdown store benchmark beside SQLite: saves/s, search p50 at N memories, open time, reindex after hand edits.

Run: ``python bench/bench_markdown.py`` (``--size 10000``; ``--search-mode`` lexical by default: with the
semantic extra a store would otherwise default to hybrid, and the first searches would time the model
embedding the store's pending memories, not the search). Texts are SciFact sentences from
../shared/data when present (synthetic sentences otherwise). Memories are spread like an agent's:
20% core (one MEMORY.md per level), 50% daily over 100 days, 30% in 10 topic files; two levels.
Nothing here is a unit test and nothing asserts on time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import stratamem as sm
from stratamem.models import Memory

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact" / "corpus.jsonl.gz"


def texts(n: int) -> list[str]:
    out: list[str] = []
    if DATA.exists():
        with gzip.open(DATA, "rt", encoding="utf-8") as f:
            for doc in map(json.loads, f):
                out.extend(s for s in re.split(r"(?<=[.!?])\s+", doc["text"]) if len(s) > 20)
                if len(out) >= n + 1000:
                    break
    rng = random.Random(7)
    words = [
        "memory",
        "river",
        "meeting",
        "coffee",
        "plan",
        "budget",
        "travel",
        "health",
        "code",
        "review",
        "friday",
        "garden",
    ]
    while len(out) < n + 1000:
        out.append(" ".join(rng.choice(words) for _ in range(12)))
    return out


def corpus(n: int) -> list[Memory]:
    rng = random.Random(1)
    sents = texts(n)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        roll = rng.random()
        category = "core" if roll < 0.2 else "daily" if roll < 0.7 else f"topic{i % 10}"
        at = start + timedelta(days=rng.randrange(100), seconds=i)
        out.append(
            Memory(
                key=f"m{i}",
                content=sents[i],
                level=sm.Level.PUBLIC if i % 3 else sm.Level.INTERNAL,
                tags=(f"t{i % 7}",),
                category=category,
                agent_id="main",
                session_id=None,
                created_at=at,
                updated_at=at,
                lineage_id=str(uuid.uuid4()),
            )
        )
    return out


def timed(action) -> float:
    t0 = time.perf_counter()
    action()
    return time.perf_counter() - t0


def build(url: str, mems: list[Memory], saves: int, result: dict, mode: str) -> tuple[sm.Store, sm.Session]:
    store = sm.open_store(url, search_mode=mode)
    result["import_s"] = timed(lambda: store.import_memories(mems))
    s = store.session("main")
    s.escalate(sm.Level.INTERNAL, "bench")
    for category in ("core", "topic1"):
        t = timed(
            lambda category=category: [
                s.save(f"new-{category}-{i}", f"a fresh note number {i}", category=category)
                for i in range(saves)
            ]
        )
        result[f"saves_per_s_{category}"] = saves / t
    return store, s


def search_latencies(sessions: dict[str, sm.Session], queries: list[str], results: dict[str, dict]) -> None:
    """Queries alternate between the stores, so load from elsewhere on the machine hits both alike."""
    for q in queries[:20]:
        for s in sessions.values():
            s.search(q)
    lat: dict[str, list[float]] = {name: [] for name in sessions}
    for q in queries:
        for name, s in sessions.items():
            t0 = time.perf_counter()
            s.search(q)
            lat[name].append((time.perf_counter() - t0) * 1000)
    for name, values in lat.items():
        results[name]["search_p50_ms"] = statistics.median(values)
        results[name]["search_p95_ms"] = statistics.quantiles(values, n=20)[18]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--saves", type=int, default=100)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--search-mode", default="lexical", choices=["lexical", "semantic", "hybrid"])
    args = parser.parse_args()
    mems = corpus(args.size)
    rng = random.Random(3)
    queries = [
        " ".join(rng.sample(m.content.split(), min(3, len(m.content.split()))))
        for m in rng.sample(mems, args.queries)
    ]
    tmp = Path(tempfile.mkdtemp(prefix="bench-md-"))
    try:
        print(
            f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
            f"Python {platform.python_version()}, SQLite {__import__('sqlite3').sqlite_version}"
        )
        print(
            f"{args.size} memories, {args.saves} saves per category, {args.queries} queries, "
            f"{args.search_mode} search"
        )
        lite: dict = {}
        md: dict = {}
        md_dir = tmp / "md"
        lite_store, lite_s = build(str(tmp / "lite.db"), mems, args.saves, lite, args.search_mode)
        md_store, md_s = build(f"markdown://{md_dir}", mems, args.saves, md, args.search_mode)
        search_latencies({"sqlite": lite_s, "markdown": md_s}, queries, {"sqlite": lite, "markdown": md})
        lite_store.close()
        md_store.close()
        for name in lite:
            print(f"{name:22s} sqlite {lite[name]:10.2f}   markdown {md[name]:10.2f}")
        print(f"search p50 ratio markdown/sqlite: {md['search_p50_ms'] / lite['search_p50_ms']:.2f}x")
        files = list(md_dir.rglob("*.md"))
        print(f"markdown files: {len(files)}, {sum(f.stat().st_size for f in files) / 1e6:.1f} MB")
        warm = [timed(lambda: sm.open_store(f"markdown://{md_dir}").close()) for _ in range(3)]
        print(f"open with sidecar (warm): {min(warm):.3f} s")
        shutil.rmtree(md_dir / ".stratamem")
        print(
            f"open without sidecar (rebuild): {timed(lambda: sm.open_store(f'markdown://{md_dir}').close()):.3f} s"
        )
        store = sm.open_store(f"markdown://{md_dir}?scan_interval=3600")
        edited = 0
        for path in sorted(files):
            text = path.read_text(encoding="utf-8")
            n = min(100 - edited, text.count("\n- updated: "))
            for _ in range(n):
                text = re.sub(
                    r"(- updated: [^\n]*\n(?:- [^\n]*\n)*\n)(?!EDITED )", r"\1EDITED ", text, count=1
                )
            path.write_text(text, encoding="utf-8")
            edited += n
            if edited >= 100:
                break
        t = timed(store.backend.rescan)
        print(f"reindex after {edited} hand edits: {t:.3f} s")
        store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
