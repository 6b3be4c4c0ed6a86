"""Embedding throughput for LoCoMo-length texts, where its time goes, and a search after a big import.

Run: ``python bench/bench_embed.py`` (``--texts N``: how many texts a throughput run embeds, LoCoMo's 788
turns repeated; ``--reps R``: rounds, the best of each kept; ``--backlog N``: the import of the last part,
0 to skip it). Needs ``stratamem[semantic]``; data from ../shared/data (``STRATAMEM_BENCH_DATA``).
Nothing here asserts on time.

The machine may be shared: every setting is measured in each round, interleaved, and compared with the
model as it ran before this change ("before": batches of 32 sorted by characters, one two-thread run at a
time) in the same round, so the ratios hold even where the absolute rates are noisy.

Parts:
1. where the time goes: tokenizer alone; word pieces per text and the padding each batching adds; one
   core's rate; the float32 matrix products' share (onnxruntime's profiler, one core) and the rate the
   products alone would allow at the core's measured GEMM speed (numpy).
2. documents per second for each batching and thread setting.
3. ``Store.reindex`` against the model alone (what the store adds: reading pending rows, writing vectors).
4. after importing ``--backlog`` memories: the import, embedding them (what ``stratamem import`` now does),
   and a search with all of them still pending (``--no-embed``), before (catch-up of 256) and now.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_core as core
from bench_core import sm

DATA = Path(os.environ.get("STRATAMEM_BENCH_DATA") or core.DATA)

from stratamem.embed import minilm
from stratamem.search import semantic


def locomo_texts() -> list[str]:
    with open(DATA / "locomo-dev.json", encoding="utf-8") as f:
        return [text for sample in json.load(f) for _, text in core.locomo_turns(sample)]


def batches(model, texts, *, session, batch, runners, by_chars=False) -> float:
    """Texts a second for one batching: sorted by characters (before) or word pieces, ``runners`` at once."""
    start = time.perf_counter()
    encodings = model._tokenizer.encode_batch(texts)
    if by_chars:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    else:
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
    chunks = [order[s : s + batch] for s in range(0, len(order), batch)]
    saved = model._session
    model._session = session
    try:
        if runners == 1:
            for chunk in chunks:
                model._infer([encodings[i] for i in chunk])
        else:
            with ThreadPoolExecutor(runners) as pool:
                list(pool.map(lambda c: model._infer([encodings[i] for i in c]), chunks))
    finally:
        model._session = saved
    return len(texts) / (time.perf_counter() - start)


def padding(lengths: np.ndarray, batch: int, by: np.ndarray) -> float:
    """Word pieces computed (each batch padded to its longest) per word piece of text."""
    order = np.argsort(by, kind="stable")
    padded = sum(
        int(lengths[order[s : s + batch]].max()) * len(order[s : s + batch])
        for s in range(0, len(order), batch)
    )
    return padded / int(lengths.sum())


def where_time_goes(model, texts: list[str]) -> None:
    import onnxruntime

    start = time.perf_counter()
    encodings = model._tokenizer.encode_batch(texts)
    tokenize = len(texts) / (time.perf_counter() - start)
    lengths = np.array([len(e.ids) for e in encodings])
    chars = np.array([len(t) for t in texts])
    print(
        f"texts: {len(texts)}, {chars.mean():.0f} characters and {lengths.mean():.1f} word pieces on average "
        f"(median {np.median(lengths):.0f}, max {lengths.max()})"
    )
    print(f"tokenizer alone: {tokenize:,.0f} texts/s")
    for batch in (8, 32, 128):
        print(
            f"  padding at batch {batch}: sorted by characters x{padding(lengths, batch, chars):.3f}, "
            f"by word pieces x{padding(lengths, batch, lengths):.3f}, unsorted x{padding(lengths, batch, np.arange(len(texts))):.3f}"
        )
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.enable_profiling = True
    options.profile_file_prefix = str(Path(tempfile.gettempdir()) / "stratamem-embed-profile")
    profiled = onnxruntime.InferenceSession(str(model._path), options, providers=["CPUExecutionProvider"])
    batches(model, texts, session=profiled, batch=32, runners=1)
    with open(profiled.end_profiling(), encoding="utf-8") as f:
        events = json.load(f)
    per_op: collections.Counter[str] = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            per_op[event["args"]["op_name"]] += event["dur"]
    total = sum(per_op.values())
    print(
        "one core, by operator: "
        + ", ".join(f"{op} {100 * t / total:.1f}%" for op, t in per_op.most_common(5))
    )
    # The float32 products per word piece: 6 layers of Q, K, V, output (384x384) and the 384x1536 feed-forward
    # pair, 2 flops a multiply-add (attention's own products are small at these lengths). Their speed inside
    # onnxruntime bounds the rate: with everything else free and both cores busy, at most ``ceiling``.
    flops = 6 * (4 * 384 * 384 + 2 * 384 * 1536) * 2
    padded = padding(lengths, 32, lengths) * int(lengths.sum())
    speed = padded * flops / (per_op["MatMul"] / 1e6)
    ceiling = 2 * speed / (flops * padded / len(texts))
    print(
        f"float32 products: {speed / 1e9:.0f} GFLOP/s on one core inside onnxruntime; "
        f"{flops * padded / len(texts) / 1e9:.2f} GFLOP a text: two such cores allow at most {ceiling:.0f} "
        f"texts/s for the products alone (400/s needs {400 * flops * padded / len(texts) / 1e9:.0f} GFLOP/s)"
    )


def throughput(model, texts: list[str], reps: int) -> dict[str, float]:
    two = model._load(2)
    one = model._session
    settings = {
        "before: by characters, batch 32, one 2-thread run": dict(
            session=two, batch=32, runners=1, by_chars=True
        ),
        "by word pieces, batch 32, one 2-thread run": dict(session=two, batch=32, runners=1),
        "one core: by word pieces, batch 32": dict(session=one, batch=32, runners=1),
        **{
            f"now: by word pieces, batch {b}, two 1-thread runs": dict(session=one, batch=b, runners=2)
            for b in (8, 16, 32, 64)
        },
    }
    best: dict[str, list[float]] = {name: [] for name in settings}
    batches(model, texts[:256], session=one, batch=32, runners=2)  # warm
    batches(model, texts[:256], session=two, batch=32, runners=1)
    for _ in range(reps):
        for name, options in settings.items():
            best[name].append(batches(model, texts, **options))
    base = max(best[next(iter(settings))])
    print(f"\ndocuments/s, best of {reps} interleaved rounds (ratio to 'before' in the same rounds):")
    for name, rates in best.items():
        print(
            f"  {name:52s} {max(rates):7.1f}/s  median {statistics.median(rates):7.1f}  x{max(rates) / base:.2f}"
        )
    return {name: max(rates) for name, rates in best.items()}


def reindex_rate(texts: list[str], count: int) -> tuple[float, float]:
    """(Store.reindex, embed_documents alone) texts a second on the same ``count`` texts."""
    with tempfile.TemporaryDirectory() as tmp:
        store = sm.open_store(str(Path(tmp) / "r.db"), search_mode="hybrid", embedder="minilm")
        store.session("a").save_many([{"key": f"k{i}", "content": t} for i, t in enumerate(texts[:count])])
        model = store.semantic.embedder
        start = time.perf_counter()
        model.embed_documents(texts[:count])
        alone = count / (time.perf_counter() - start)
        start = time.perf_counter()
        store.reindex()
        store_rate = count / (time.perf_counter() - start)
        store.close()
    return store_rate, alone


def after_import(texts: list[str], count: int) -> None:
    """Import ``count`` memories; embed them (the import's default) or search with all still pending."""
    lines = [
        {
            "key": f"turn-{i:06d}",
            "content": texts[i % len(texts)] + f" (#{i})",
            "level": "PUBLIC",
            "agent_id": "main",
        }
        for i in range(count)
    ]
    from stratamem.transfer import read_records

    with tempfile.TemporaryDirectory() as tmp:
        dump = "\n".join(json.dumps(line) for line in lines) + "\n"
        import io

        memories, turns = read_records(io.StringIO(dump), 64 * 1024)
        store = sm.open_store(str(Path(tmp) / "i.db"), search_mode="hybrid", embedder="minilm")
        start = time.perf_counter()
        store.import_memories(memories, scan=True, turns=turns)
        imported = time.perf_counter() - start
        store.semantic.embedder.embed_query("warm")
        s = store.session("main")
        questions = [
            "what did she paint last summer?",
            "which dog does she own?",
            "when is the camping trip?",
            "what does he do for work?",
            "where did they go hiking?",
        ]
        bounds = (semantic.CATCH_UP, semantic.CATCH_UP_SECONDS)
        for name, catch_up, budget in (
            ("now (32 at most, 50 ms)", *bounds),
            ("before (256, no time budget)", 256, float("inf")),
        ):
            semantic.CATCH_UP, semantic.CATCH_UP_SECONDS = catch_up, budget
            times = []
            for q in questions:
                start = time.perf_counter()
                s.search(q)
                times.append(time.perf_counter() - start)
            semantic.CATCH_UP, semantic.CATCH_UP_SECONDS = bounds
            print(
                f"  search with the import pending, {name}: median {1000 * statistics.median(times):.0f} ms, "
                f"max {1000 * max(times):.0f} ms"
            )
        store.close()
        # the import's default: a fresh store, the import and then embedding all of it
        store = sm.open_store(str(Path(tmp) / "j.db"), search_mode="hybrid", embedder="minilm")
        store.semantic.embedder.embed_query("warm")
        start = time.perf_counter()
        store.import_memories(memories, scan=True, turns=turns)
        embedded = store.reindex()
        both = time.perf_counter() - start
        s = store.session("main")
        times = []
        for q in questions:
            start = time.perf_counter()
            s.search(q)
            times.append(time.perf_counter() - start)
        print(
            f"  import {count:,}: {imported:.1f} s; `stratamem import` (import, then embed {embedded:,}): "
            f"{both:.1f} s ({embedded / (both - imported):.0f}/s embedded); searches after it: median "
            f"{1000 * statistics.median(times):.0f} ms"
        )
        print(
            "  time until searches are fast again: after `import`, at once (it returned after embedding); "
            "after `import --no-embed`, at once (each search pays at most 32 texts or ~50 ms of catch-up)"
        )
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=2364)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--backlog", type=int, default=10_000)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    base = locomo_texts()
    texts = [base[i % len(base)] for i in range(args.texts)]
    model = minilm.MiniLMEmbedder()
    where_time_goes(model, base)
    throughput(model, texts, args.reps)
    store_rate, alone = reindex_rate(texts, min(len(texts), 2000))
    print(
        f"\nStore.reindex: {store_rate:.0f}/s against embed_documents alone {alone:.0f}/s on the same texts "
        f"(x{store_rate / alone:.2f})"
    )
    if args.backlog:
        print(f"\nafter importing {args.backlog:,} memories:")
        after_import(base, args.backlog)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
