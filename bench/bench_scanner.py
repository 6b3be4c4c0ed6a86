"""Poisoning scanner speed on ordinary and hostile text: the fast path against the full path, same run.

Run: ``python bench/bench_scanner.py`` (``--rounds 5`` for steadier numbers, ``--profile zipf`` to print
where the fast path spends its time on one kind of text). Every write that passes the policy gate is
scanned, so this is a per-write cost. Each row scans the same texts both ways, alternating rounds, and
keeps each path's best round; the ratio is what to compare across machines (print ``uptime`` with it).

- ``sentences``: the scanner tests' benign corpus (notes, code, nine languages, base64 images, hashes);
- ``locomo``: LoCoMo turns as memories (``speaker: text``; ../shared/data/locomo-dev.json, or
  ``STRATAMEM_BENCH_DATA``; any parent's shared/data), skipped when the file is missing;
- ``zipf``: 8-word texts and names as ``bench_graph.py`` writes them;
- ``attack``: the obfuscated payloads of ``tests/policy/scanner_corpus.py`` (320 writes);
- ``graph call``: ``scan_all`` over one ``create_entities`` call of 100 entities (name, type, two
  observations), as the gate scans it — texts/s counts every text of the call;
- ``memory``: ``scan_all`` over a memory's key, content, category and two tags (LoCoMo content when present,
  else zipf), as ``memory_save`` is scanned — texts/s counts memories.

Nothing here is a test; nothing asserts on time. The verdicts of both paths are compared on every text.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "policy"))

import bench_core
from bench_core import machine
from bench_graph import Workload
from scanner_corpus import BENIGN, poisoned

from stratamem.policy.scanner import KINDS, scan, scan_all, scan_full

Scanner = Callable[[Sequence[str]], tuple[str, ...]]


def full_all(texts: Sequence[str]) -> tuple[str, ...]:
    """``scan_all`` by the full path: each distinct text scanned without shortcuts."""
    found = {kind for text in dict.fromkeys(texts) for kind in scan_full(text)}
    return tuple(kind for kind in KINDS if kind in found)


def locomo_texts() -> list[str]:
    folders = [Path(os.environ["STRATAMEM_BENCH_DATA"])] if os.environ.get("STRATAMEM_BENCH_DATA") else []
    folders += [base / "shared" / "data" for base in ROOT.parents]
    data = next((f / "locomo-dev.json" for f in folders if (f / "locomo-dev.json").exists()), None)
    if data is None:
        return []
    with open(data, encoding="utf-8") as f:
        return [text for sample in json.load(f) for _, text in bench_core.locomo_turns(sample)]


def workloads() -> dict[str, tuple[list[list[str]], int]]:
    """Kind -> (calls, texts per call), each call a list of texts scanned together."""
    graph = Workload(1000)
    zipf = [t for e in graph.entities for t in (e["name"], *e["observations"])]
    locomo = locomo_texts()
    entities = graph.entities
    calls = [
        [t for e in entities[i : i + 100] for t in (e["name"], e["entityType"], *e["observations"])]
        for i in range(0, len(entities), 100)
    ]
    contents = locomo[:1000] or zipf[:1000]
    memories = [[f"note-{i}", text, "core", "chat", f"session-{i % 7}"] for i, text in enumerate(contents)]
    kinds: dict[str, tuple[list[list[str]], int]] = {
        "sentences": ([[t] for t in BENIGN], 1),
        "locomo": ([[t] for t in locomo], 1),
        "zipf": ([[t] for t in zipf], 1),
        "attack": ([[t] for _, _, t in poisoned()], 1),
        "graph call": (calls, 1),
        "memory": (memories, 0),
    }
    return {name: value for name, value in kinds.items() if value[0]}


def rate(calls: list[list[str]], per_call: int, scanner: Scanner) -> float:
    """Texts (or, with ``per_call`` 0, calls) per second."""
    started = time.perf_counter()
    for texts in calls:
        scanner(texts)
    took = time.perf_counter() - started
    count = sum(len(c) for c in calls) if per_call else len(calls)
    return count / took


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", metavar="KIND", help="profile the fast path on one kind of text")
    args = parser.parse_args()
    kinds = workloads()
    if args.profile:
        calls, _ = kinds[args.profile]
        profile = cProfile.Profile()
        profile.runcall(lambda: [scan_all(c) for c in calls])
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)
        return
    print(machine())
    print("load at start:", load())
    disagree = [
        (name, texts)
        for name, (calls, _) in kinds.items()
        for texts in calls
        if scan_all(texts) != full_all(texts)
    ]
    print(f"verdicts differing between the paths: {len(disagree)}")
    print(f"{'texts':<12} {'count':>6} {'full /s':>10} {'fast /s':>10} {'ratio':>7}")
    for name, (calls, per_call) in kinds.items():
        full = fast = 0.0
        for _ in range(args.rounds):
            full = max(full, rate(calls, per_call, full_all))
            fast = max(fast, rate(calls, per_call, scan_all))
        count = sum(len(c) for c in calls) if per_call else len(calls)
        print(f"{name:<12} {count:>6} {full:>10,.0f} {fast:>10,.0f} {fast / full:>6.1f}x")
    single = [t for t in locomo_texts()[:300]] or [t for t in BENIGN]
    print(
        f"one text per scan() call ({len(single)} texts): {rate([[t] for t in single], 1, lambda c: scan(c[0])):,.0f}/s"
    )
    print("load at end:  ", load())
    print("(memory: memories/s, each a key, content, category and two tags scanned together)")


if __name__ == "__main__":
    main()
