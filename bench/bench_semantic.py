"""Search by meaning: retrieval quality per mode, hybrid latency against lexical, embedding throughput.

Run: ``python bench/bench_semantic.py`` (``--quick``: quality and 10k latency only; ``--quality-only``:
no latency; ``--tune``: sweep the fusion weight and the dense similarity floor on LoCoMo dev). Needs
``stratamem[semantic]``.
Data from ../shared/data (see bench_core); nothing here asserts on time.

Protocol as bench_core: one memory per LoCoMo turn (``speaker: text`` plus the image caption), one
agent per conversation, the raw question as query; SciFact abstracts (title. text) with the train
claims. "fts5" is bare SQLite FTS5 (porter, OR query) over the same texts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_core as core
from bench_core import sm

# ../shared/data beside the checkout, or wherever STRATAMEM_BENCH_DATA points (e.g. from a worktree).
DATA = core.DATA = Path(os.environ.get("STRATAMEM_BENCH_DATA") or core.DATA)

from stratamem.embed import shared_minilm
from stratamem.models import Memory
from stratamem.search import dense, fusion

MODES = ("lexical", "semantic", "hybrid")


class Locomo:
    """The dev conversations loaded once, so settings can be swept over the same store."""

    def __init__(self, tmp: str) -> None:
        with open(DATA / "locomo-dev.json", encoding="utf-8") as f:
            self.samples = json.load(f)
        self.store = sm.open_store(str(Path(tmp) / "locomo.db"), search_mode="hybrid", embedder="minilm")
        self.sessions, self.fts, self.questions = {}, {}, []
        n = 0
        for sample in self.samples:
            agent = sample["sample_id"]
            turns = core.locomo_turns(sample)
            s = self.sessions[agent] = self.store.session(agent)
            for dia, text in turns:
                s.save(dia, text, category="conversation")
            n += len(turns)
            self.fts[agent] = core.fts5_db(turns)
            known = {d for d, _ in turns}
            for qa in sample["qa"]:
                gold = core._evidence_ids(qa.get("evidence", []), known)
                if gold:
                    self.questions.append((agent, qa["question"], gold, str(qa["category"])))
        start = time.perf_counter()
        self.store.reindex()
        self.embed_rate = n / (time.perf_counter() - start)

    def run(self, modes=MODES, with_fts=True) -> dict:
        scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for agent, question, gold, cat in self.questions:
            ranked = {
                m: [h.memory.key for h in self.sessions[agent].search(question, 25, mode=m)] for m in modes
            }
            if with_fts:
                ranked["fts5"] = core.fts5_search(
                    self.fts[agent], core.fts5_query(self.store.analyzer, question), 25
                )
            for name, keys in ranked.items():
                for metric, value in (
                    ("r@5", core.recall_at(keys, gold, 5)),
                    ("r@10", core.recall_at(keys, gold, 10)),
                    ("r@25", core.recall_at(keys, gold, 25)),
                    ("ndcg@10", core.ndcg_at(keys, gold)),
                    ("mrr@10", core.mrr_at(keys, gold)),
                ):
                    scores[name][metric].append(value)
                    scores[name][f"{metric}/cat{cat}"].append(value)
        return {name: {k: statistics.mean(v) for k, v in table.items()} for name, table in scores.items()}


def print_locomo(result: dict) -> None:
    print(f"{'':>10} {'r@5':>7} {'r@10':>7} {'r@25':>7} {'ndcg@10':>8} {'mrr@10':>7}")
    for name, t in result.items():
        print(
            f"{name:>10} {t['r@5']:7.3f} {t['r@10']:7.3f} {t['r@25']:7.3f} {t['ndcg@10']:8.3f} {t['mrr@10']:7.3f}"
        )
    print("  recall@10 by category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial)")
    for name, t in result.items():
        print(f"{name:>10} " + " ".join(f"cat{c} {t.get(f'r@10/cat{c}', 0):.3f}" for c in range(1, 6)))


def tune(loc: Locomo) -> None:
    model = shared_minilm()
    floors = (0.1, 0.2, 0.3)
    saved = (fusion.DENSE_WEIGHT, fusion.DENSE_CANDIDATES, model.min_similarity)
    for depth in (50, 100):
        print(
            f"LoCoMo dev, hybrid recall@10 / multi-hop recall@10, dense top {depth}, by dense weight (rows) and "
            "similarity floor (columns)"
        )
        print(f"{'weight':>8} " + " ".join(f"{f:>13}" for f in floors))
        for weight in (0.2, 0.25, 0.3, 0.35, 0.4):
            cells = []
            for floor in floors:
                fusion.DENSE_WEIGHT, fusion.DENSE_CANDIDATES, model.min_similarity = weight, depth, floor
                loc.store.semantic._queries.clear()  # cached query vectors carry the floor they were made with
                r = loc.run(modes=("hybrid",), with_fts=False)["hybrid"]
                cells.append(f"{r['r@10']:.3f} / {r['r@10/cat1']:.3f}")
            print(f"{weight:>8} " + " ".join(f"{c:>13}" for c in cells), flush=True)
    fusion.DENSE_WEIGHT, fusion.DENSE_CANDIDATES, model.min_similarity = saved
    loc.store.semantic._queries.clear()


def scifact(tmp: str) -> dict:
    corpus = core.scifact_corpus()
    queries, qrels = core.scifact_queries()
    store = sm.open_store(str(Path(tmp) / "scifact.db"), search_mode="hybrid", embedder="minilm")
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
            lineage_id=f"l{doc_id}",
        )
        for doc_id, title, text in corpus
    )
    start = time.perf_counter()
    store.reindex()
    rate = len(corpus) / (time.perf_counter() - start)
    s = store.session("scifact")
    fts = core.fts5_db([(doc_id, f"{title}. {text}") for doc_id, title, text in corpus])
    out: dict[str, list[float]] = defaultdict(list)
    for qid, text in queries:
        for mode in MODES:
            out[mode].append(core.ndcg_at([h.memory.key for h in s.search(text, 10, mode=mode)], qrels[qid]))
        out["fts5"].append(
            core.ndcg_at(core.fts5_search(fts, core.fts5_query(store.analyzer, text), 10), qrels[qid])
        )
    store.close()
    return {
        "ndcg": {k: statistics.mean(v) for k, v in out.items()},
        "embed_rate": rate,
        "queries": len(queries),
    }


class RandomVectors:
    """Fills a large store's vectors fast: random unit vectors under the real model's identity.

    Latency depends on the number and dimension of vectors, not on their values; the query is
    still embedded by the real model at search time.
    """

    def __init__(self, identity: str, dim: int) -> None:
        self.identity, self.dim, self.min_similarity = identity, dim, 0.2
        self.rng = np.random.default_rng(3)

    def embed_documents(self, texts):
        v = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def embed_query(self, text):
        return self.embed_documents([text])[0]


def fill(n: int, real_vectors: bool, path: str) -> tuple[float | None, float | None]:
    """Import n synthetic memories and embed them; (import rate, reindex seconds), None when reused.

    A store already filled at ``path`` (``--keep``: same size, same fill, complete) is reused, so a
    100k store embedded by the model once can be measured again without the 10-20 minute reindex.
    """
    model = shared_minilm()
    done = Path(path + ".filled")
    if done.exists() and done.read_text() == f"{n} {real_vectors} {model.identity}":
        return None, None
    for stale in Path(path).parent.glob(Path(path).name + "*"):
        stale.unlink()
    memories = core.synthetic_memories(n)
    with sm.open_store(path, search_mode="lexical", embedder=None) as store:
        t0 = time.perf_counter()
        store.import_memories(memories)
        import_rate = n / (time.perf_counter() - t0)
    filler = model if real_vectors else RandomVectors(model.identity, model.dim)
    last = [time.perf_counter()]

    def progress(done_: int, total: int) -> None:
        if time.perf_counter() - last[0] > 30:
            last[0] = time.perf_counter()
            print(f"          reindex {done_}/{total} ({done_ / (last[0] - t0):.0f}/s)", flush=True)

    with sm.open_store(path, search_mode="hybrid", embedder=filler) as store:
        t0 = time.perf_counter()
        store.reindex(progress=progress)
        reindex_s = time.perf_counter() - t0
    done.write_text(f"{n} {real_vectors} {model.identity}")
    return import_rate, reindex_s


def prefilter_recall(store: sm.Store, n: int, queries: list[str]) -> float | None:
    """Share of the exact semantic top 10 that the two-pass ranking (sign bits, then exact) also returns."""
    if n <= dense.PREFILTER_ABOVE:
        return None
    two_pass = store.session("bench")
    found = [[h.memory.key for h in two_pass.search(q, max_results=10, mode="semantic")] for q in queries]
    saved, dense.PREFILTER_ABOVE = dense.PREFILTER_ABOVE, 1 << 62
    try:
        exact_s = store.session("bench")
        exact = [[h.memory.key for h in exact_s.search(q, max_results=10, mode="semantic")] for q in queries]
    finally:
        dense.PREFILTER_ABOVE = saved
    hits = sum(len(set(a) & set(b)) for a, b in zip(found, exact, strict=True))
    return hits / max(1, sum(len(b) for b in exact))


def latency(n: int, n_queries: int, real_vectors: bool, tmp: str) -> dict:
    claims = [q for _, q in core.scifact_queries()[0]][:n_queries]
    path = str(Path(tmp) / f"lat{n}-{'model' if real_vectors else 'random'}.db")
    model = shared_minilm()
    import_rate, reindex_s = fill(n, real_vectors, path)
    rows = []
    with sm.open_store(path, search_mode="hybrid", embedder="minilm") as store:
        warm = store.session("bench")
        # One session per mode: query vectors are cached per session, so no mode reuses another's.
        sessions = {m: store.session("bench") for m in ("lexical", "hybrid", "semantic")}
        for label, queries in (
            ("claims", claims),
            ("3 words", [core._short(store.analyzer, q, 3) for q in claims]),
        ):
            for q in claims[-10:]:
                warm.search(q, mode="hybrid")
                warm.search(q, mode="lexical")
            times: dict[str, list[float]] = defaultdict(list)
            for q in queries:
                for mode, s in sessions.items():
                    t0 = time.perf_counter()
                    s.search(q, max_results=10, mode=mode)
                    times[mode].append((time.perf_counter() - t0) * 1000)
                # the same query again in the same session at once: its vector is cached (the cache is a
                # bounded LRU per store, so a second pass over all queries would find them evicted)
                t0 = time.perf_counter()
                sessions["hybrid"].search(q, max_results=10, mode="hybrid")
                times["cached"].append((time.perf_counter() - t0) * 1000)
            t_embed = []
            for q in queries[:50]:
                t0 = time.perf_counter()
                model.embed_query(q)
                t_embed.append((time.perf_counter() - t0) * 1000)
            rows.append(
                {
                    "n": n,
                    "queries": label,
                    "embed_p50": core.pct(t_embed, 50),
                    "prefilter_recall": prefilter_recall(store, n, queries[:50]),
                    **{f"{m}_p50": core.pct(v, 50) for m, v in times.items()},
                    **{f"{m}_p95": core.pct(v, 95) for m, v in times.items()},
                }
            )
    return {"rows": rows, "import_rate": import_rate, "reindex_s": reindex_s, "real": real_vectors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="quality and 10k latency only")
    parser.add_argument("--tune", action="store_true", help="sweep fusion weight and similarity floor (dev)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--quality-only", action="store_true", help="LoCoMo and SciFact quality, no latency")
    parser.add_argument("--sizes", help="comma-separated store sizes for latency (default 10000,100000)")
    parser.add_argument(
        "--fill",
        choices=("auto", "model", "random"),
        default="auto",
        help="vectors for latency stores: the model, random unit vectors, or auto (model up to 10k)",
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="keep the latency stores in DIR and reuse them on the next run (skips the reindex)",
    )
    parser.add_argument(
        "--fill-only", action="store_true", help="with --keep: build the stores, measure nothing"
    )
    args = parser.parse_args()
    print("machine:", core.machine(), "| load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    model = shared_minilm()
    print(
        "model:",
        model.identity,
        f"(fusion {fusion.DENSE_WEIGHT} dense + {1 - fusion.DENSE_WEIGHT} BM25, "
        f"floor {model.min_similarity})",
    )
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        if args.keep:
            Path(tmp).mkdir(parents=True, exist_ok=True)
        if args.fill_only:
            for n in [int(x) for x in (args.sizes or "10000,100000").split(",")]:
                real = args.fill == "model" or (args.fill == "auto" and n <= 10_000)
                path = str(Path(tmp) / f"lat{n}-{'model' if real else 'random'}.db")
                import_rate, reindex_s = fill(n, real, path)
                if reindex_s is not None:
                    print(
                        f"{n}: import {import_rate:.0f}/s, reindex {reindex_s:.1f} s ({n / reindex_s:.0f}/s)"
                    )
            return
        if not args.skip_quality:
            loc = Locomo(tmp)
            print(f"\nLoCoMo dev ({len(loc.questions)} questions), embedding {loc.embed_rate:.0f} turns/s")
            print_locomo(loc.run())
            if args.tune:
                tune(loc)
            loc.store.close()
            sf = scifact(tmp)
            print(
                f"\nSciFact train ({sf['queries']} claims) nDCG@10: "
                + "  ".join(f"{k} {v:.3f}" for k, v in sf["ndcg"].items())
                + f"   (embedding {sf['embed_rate']:.0f} abstracts/s)"
            )
        if args.quality_only:
            return
        sizes = (
            [int(x) for x in args.sizes.split(",")]
            if args.sizes
            else [10_000]
            if args.quick
            else [10_000, 100_000]
        )
        print(
            "\nsearch latency, one agent, top 10, ms (hybrid and semantic include embedding the query; "
            "'cached': hybrid again with the query vector cached)"
        )
        print(
            f"{'memories':>9} {'queries':>8} {'embed':>6} {'lexical':>8} {'hybrid':>7} {'semantic':>9} "
            f"{'hyb p95':>8} {'cached':>7} {'hyb/lex':>8} {'2-pass r@10':>12}"
        )
        for n in sizes:
            real = args.fill == "model" or (args.fill == "auto" and n <= 10_000)
            result = latency(n, args.queries, real_vectors=real, tmp=tmp)
            for r in result["rows"]:
                recall = "exact" if r["prefilter_recall"] is None else f"{r['prefilter_recall']:.3f}"
                print(
                    f"{r['n']:>9} {r['queries']:>8} {r['embed_p50']:6.2f} {r['lexical_p50']:8.2f} "
                    f"{r['hybrid_p50']:7.2f} {r['semantic_p50']:9.2f} {r['hybrid_p95']:8.2f} "
                    f"{r['cached_p50']:7.2f} {r['hybrid_p50'] / r['lexical_p50']:7.2f}x {recall:>12}"
                )
            print("          load average now:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
            what = "model" if result["real"] else "random vectors (no model)"
            if result["reindex_s"] is None:
                print(f"          store with {what} vectors reused from --keep {tmp}")
            else:
                print(
                    f"          import {result['import_rate']:.0f} memories/s; reindex with {what}: "
                    f"{result['reindex_s']:.1f} s ({n / result['reindex_s']:.0f}/s)"
                )


if __name__ == "__main__":
    main()
