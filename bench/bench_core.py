"""Core benchmark: save/import throughput, search latency against bare FTS5, retrieval quality.

Run: ``python bench/bench_core.py`` (add ``--quick`` for 10k only, ``--sizes 10000,100000``).
Texts come from ../shared/data (SciFact abstracts split into sentences, LoCoMo dialogues);
nothing here is a unit test and nothing asserts on time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
# The core benchmark measures lexical search; bench_semantic.py measures the other modes.
os.environ.setdefault("STRATAMEM_SEARCH_MODE", "lexical")

import stratamem as sm
from stratamem.models import Memory
from stratamem.text import tokens

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


# ---------------------------------------------------------------------------- data


def scifact_corpus() -> list[tuple[str, str, str]]:
    with gzip.open(DATA / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        return [(d["_id"], d.get("title", ""), d["text"]) for d in map(json.loads, f)]


def scifact_queries() -> tuple[list[tuple[str, str]], dict[str, set[str]]]:
    with open(DATA / "scifact" / "queries_train.jsonl", encoding="utf-8") as f:
        queries = [(d["_id"], d["text"]) for d in map(json.loads, f)]
    qrels: dict[str, set[str]] = defaultdict(set)
    with open(DATA / "scifact" / "qrels_train.tsv", encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[0] != "query-id" and int(parts[2]) > 0:
                qrels[parts[0]].add(parts[1])
    return [q for q in queries if q[0] in qrels], qrels


def sentences() -> list[str]:
    out = []
    for _, _, text in scifact_corpus():
        out.extend(s for s in re.split(r"(?<=[.!?])\s+", text) if len(s) > 20)
    return out


def synthetic_memories(n: int, agent: str = "bench") -> list[Memory]:
    """n memories of one or two SciFact sentences each, deterministic."""
    pool = sentences()
    rng = random.Random(7)
    now = datetime.now(UTC)
    out = []
    for i in range(n):
        text = (
            pool[i % len(pool)]
            if i < len(pool)
            else pool[rng.randrange(len(pool))] + " " + pool[rng.randrange(len(pool))]
        )
        out.append(
            Memory(
                key=f"m{i}",
                content=text,
                level=sm.Level.PUBLIC,
                tags=(),
                category="core",
                agent_id=agent,
                session_id=None,
                created_at=now,
                updated_at=now,
                lineage_id=str(uuid.uuid4()),
            )
        )
    return out


# ---------------------------------------------------------------------------- helpers


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def fts5_db(texts: list[tuple[str, str]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(key, content, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO f(key, content) VALUES (?, ?)", texts)
    conn.commit()
    return conn


def fts5_query(analyzer: sm.store.Analyzer, query: str) -> str:
    """The same words our analyzer keeps (stopwords dropped), OR-ed and quoted for FTS5."""
    words = tokens(query)
    kept = [w for w in words if w not in analyzer._stop] or words
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(kept)) or '""'


def fts5_search(conn: sqlite3.Connection, match: str, k: int) -> list[str]:
    return [r[0] for r in conn.execute("SELECT key FROM f WHERE f MATCH ? ORDER BY rank LIMIT ?", (match, k))]


# ---------------------------------------------------------------------------- throughput


def bench_saves(n: int, synchronous: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        store = sm.open_store(str(Path(tmp) / "s.db"), synchronous=synchronous)
        s = store.session("bench")
        pool = sentences()[:n]
        start = time.perf_counter()
        for i, text in enumerate(pool):
            s.save(f"k{i}", text)
        elapsed = time.perf_counter() - start
        store.close()
    return n / elapsed


def bench_import(n: int) -> float:
    memories = synthetic_memories(n)
    with tempfile.TemporaryDirectory() as tmp:
        store = sm.open_store(str(Path(tmp) / "i.db"))
        start = time.perf_counter()
        store.import_memories(memories)
        elapsed = time.perf_counter() - start
        store.close()
    return n / elapsed


# ---------------------------------------------------------------------------- latency


def _short(analyzer, query: str, words: int) -> str:
    """The first few content words of a query: a memory-style short question."""
    kept = [w for w in tokens(query) if w not in analyzer._stop]
    return " ".join(kept[:words])


def bench_search(n: int, n_queries: int) -> list[dict]:
    """Latency of full claims (about 9 terms) and of 3-word queries, ours beside bare FTS5."""
    memories = synthetic_memories(n)
    claims = [q for _, q in scifact_queries()[0]][:n_queries]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        store = sm.open_store(str(Path(tmp) / "l.db"))
        store.import_memories(memories)
        s = store.session("bench")
        fts = fts5_db([(m.key, m.content) for m in memories])
        for label, queries in (
            ("claims", claims),
            ("3 words", [_short(store.analyzer, q, 3) for q in claims]),
        ):
            matches = [fts5_query(store.analyzer, q) for q in queries]
            for q, m in zip(queries[:20], matches[:20], strict=True):  # warm both caches
                s.search(q)
                fts5_search(fts, m, 10)
            ours, bare = [], []
            for q, m in zip(queries, matches, strict=True):
                t0 = time.perf_counter()
                s.search(q, max_results=10)
                t1 = time.perf_counter()
                fts5_search(fts, m, 10)
                t2 = time.perf_counter()
                ours.append((t1 - t0) * 1000)
                bare.append((t2 - t1) * 1000)
            results.append(
                {
                    "n": n,
                    "queries": label,
                    "p50": pct(ours, 50),
                    "p95": pct(ours, 95),
                    "fts_p50": pct(bare, 50),
                    "fts_p95": pct(bare, 95),
                    "qps": 1000 / statistics.mean(ours),
                }
            )
        store.close()
    return results


# ---------------------------------------------------------------------------- quality


def ndcg_at(ranked: list[str], gold: set[str], k: int = 10) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def mrr_at(ranked: list[str], gold: set[str], k: int = 10) -> float:
    for i, d in enumerate(ranked[:k]):
        if d in gold:
            return 1 / (i + 1)
    return 0.0


def recall_at(ranked: list[str], gold: set[str], k: int) -> float:
    return len(gold & set(ranked[:k])) / len(gold)


def _evidence_ids(raw: list[str], known: set[str]) -> set[str]:
    out = set()
    for item in raw:
        for part in re.split(r"[;,\s]+", item):
            m = re.match(r"D:?(\d+):0*(\d+)$", part.strip())
            if m:
                dia = f"D{int(m.group(1))}:{int(m.group(2))}"
                if dia in known:
                    out.add(dia)
    return out


def locomo_turns(sample: dict) -> list[tuple[str, str]]:
    """(dia_id, "speaker: text [image: caption]") for every turn of one LoCoMo conversation."""
    turns = []
    for name, value in sample["conversation"].items():
        if re.fullmatch(r"session_\d+", name) and isinstance(value, list):
            for turn in value:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                turns.append((turn["dia_id"], text))
    return turns


def locomo() -> dict:
    with open(DATA / "locomo-dev.json", encoding="utf-8") as f:
        samples = json.load(f)
    scores: dict[str, dict[str, list[float]]] = {"stratamem": defaultdict(list), "fts5": defaultdict(list)}
    with tempfile.TemporaryDirectory() as tmp:
        store = sm.open_store(str(Path(tmp) / "locomo.db"))
        for sample in samples:
            agent = sample["sample_id"]
            turns = locomo_turns(sample)
            s = store.session(agent)
            for dia, text in turns:
                s.save(dia, text, category="conversation")
            fts = fts5_db(turns)
            known = {d for d, _ in turns}
            for qa in sample["qa"]:
                gold = _evidence_ids(qa.get("evidence", []), known)
                if not gold:
                    continue
                cat = str(qa["category"])
                ours = [h.memory.key for h in s.search(qa["question"], max_results=25)]
                bare = fts5_search(fts, fts5_query(store.analyzer, qa["question"]), 25)
                for name, ranked in (("stratamem", ours), ("fts5", bare)):
                    for metric, value in (
                        ("r@5", recall_at(ranked, gold, 5)),
                        ("r@10", recall_at(ranked, gold, 10)),
                        ("r@25", recall_at(ranked, gold, 25)),
                        ("ndcg@10", ndcg_at(ranked, gold)),
                        ("mrr@10", mrr_at(ranked, gold)),
                    ):
                        scores[name][metric].append(value)
                        scores[name][f"{metric}/cat{cat}"].append(value)
        store.close()
    return {name: {k: statistics.mean(v) for k, v in table.items()} for name, table in scores.items()}


def scifact() -> dict:
    corpus = scifact_corpus()
    queries, qrels = scifact_queries()
    with tempfile.TemporaryDirectory() as tmp:
        store = sm.open_store(str(Path(tmp) / "scifact.db"))
        now = datetime.now(UTC)
        store.import_memories(
            Memory(
                key=doc_id,
                content=f"{title}. {text}" if title else text,
                level=sm.Level.PUBLIC,
                tags=(),
                category="core",
                agent_id="scifact",
                session_id=None,
                created_at=now,
                updated_at=now,
                lineage_id=str(uuid.uuid4()),
            )
            for doc_id, title, text in corpus
        )
        s = store.session("scifact")
        fts = fts5_db([(doc_id, f"{title}. {text}") for doc_id, title, text in corpus])
        ours, bare = [], []
        for qid, text in queries:
            ours.append(ndcg_at([h.memory.key for h in s.search(text, 10)], qrels[qid]))
            bare.append(ndcg_at(fts5_search(fts, fts5_query(store.analyzer, text), 10), qrels[qid]))
        store.close()
    return {"stratamem": statistics.mean(ours), "fts5": statistics.mean(bare), "queries": len(queries)}


# ---------------------------------------------------------------------------- main


def machine() -> str:
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="10k only, fewer queries")
    parser.add_argument("--skip-quality", action="store_true")
    args = parser.parse_args()
    sizes = [10_000] if args.quick else [int(x) for x in args.sizes.split(",")]
    n_queries = 100 if args.quick else args.queries

    print(f"machine: {machine()}\n")
    print("throughput")
    for sync in ("NORMAL", "FULL"):
        print(f"  save, one transaction each (synchronous={sync}): {bench_saves(1000, sync):8.0f} saves/s")
    print(f"  import, one batch of 10k:                          {bench_import(10_000):8.0f} memories/s\n")

    print("search latency, one agent, top 10, SciFact claims as queries (ms; qps = one client, sequential)")
    print(
        f"  {'memories':>9} {'queries':>8} {'p50':>7} {'p95':>7} {'FTS5 p50':>9} {'FTS5 p95':>9} {'p50 ratio':>9} {'qps':>7}"
    )
    for n in sizes:
        for r in bench_search(n, n_queries):
            print(
                f"  {n:>9} {r['queries']:>8} {r['p50']:7.2f} {r['p95']:7.2f} {r['fts_p50']:9.2f} {r['fts_p95']:9.2f} "
                f"{r['p50'] / r['fts_p50']:8.2f}x {r['qps']:7.0f}"
            )

    if args.skip_quality:
        return
    print("\nretrieval quality: LoCoMo dev (conv-26, conv-30), evidence turns")
    table = locomo()
    metrics = ["r@5", "r@10", "r@25", "ndcg@10", "mrr@10"]
    print(f"  {'':>10} " + " ".join(f"{m:>8}" for m in metrics))
    for name in ("stratamem", "fts5"):
        print(f"  {name:>10} " + " ".join(f"{table[name][m]:8.3f}" for m in metrics))
    print("  recall@10 by category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial)")
    for name in ("stratamem", "fts5"):
        cats = " ".join(f"cat{c} {table[name].get(f'r@10/cat{c}', float('nan')):.3f}" for c in range(1, 6))
        print(f"  {name:>10} {cats}")
    sf = scifact()
    print(f"\nretrieval quality: SciFact train ({sf['queries']} claims), nDCG@10")
    print(f"   stratamem {sf['stratamem']:.3f}   bare FTS5 {sf['fts5']:.3f}")


if __name__ == "__main__":
    main()
