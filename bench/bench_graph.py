"""Knowledge-graph benchmark: build 10k and 100k nodes (~3 edges each) through the public API, then time reads.

Run: ``python bench/bench_graph.py`` (``--sizes 10000`` for the small graph only, ``--no-official`` to skip the
comparison). Prints writes/s and p50/p95 of ``search_nodes``, ``open_nodes`` and ``neighbors`` (depth 2).
When ``npx`` can fetch ``@modelcontextprotocol/server-memory`` the same 10k workload is sent to the official
MCP memory server over stdio with the ``mcp`` client — and, for an equal transport, to ``stratamem mcp
--profile mcp-memory`` — and the ratios are printed. Nothing here is a test; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import machine

import stratamem as sm
from stratamem.tools import execute

TYPES = [
    "person",
    "team",
    "project",
    "decision",
    "service",
    "document",
    "meeting",
    "customer",
    "vendor",
    "risk",
]
RELATIONS = ["manages", "depends_on", "owns", "reviews", "blocks", "mentions", "works_with", "decided_by"]
ENTITY_BATCH = 100
RELATION_BATCH = 300


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def workload(n: int, seed: int = 7) -> tuple[list[dict], list[dict], list[str], list[list[str]], list[str]]:
    """Entities, relations (~3 per node), search queries, open_nodes name lists, neighbour starts."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    zipf = [1 / (i + 1) for i in range(len(words))]
    pick = lambda k: rng.choices(words, weights=zipf, k=k)  # noqa: E731
    entities = [
        {
            "name": f"{pick(1)[0]}-{i}",
            "entityType": rng.choice(TYPES),
            "observations": [" ".join(pick(8)), " ".join(pick(8))],
        }
        for i in range(n)
    ]
    names = [e["name"] for e in entities]
    relations, seen = [], set()
    while len(relations) < 3 * n:
        a, b, r = rng.randrange(n), rng.randrange(n), rng.choice(RELATIONS)
        if a != b and (a, b, r) not in seen:
            seen.add((a, b, r))
            relations.append({"from": names[a], "to": names[b], "relationType": r})
    queries = [" ".join(rng.sample(words[:2000], 2)) for _ in range(200)]
    opens = [rng.sample(names, 3) for _ in range(200)]
    starts = rng.sample(names, 200)
    return entities, relations, queries, opens, starts


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def timed(calls: list[Callable[[], object]]) -> dict[str, float]:
    samples = []
    for call in calls:
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return {"p50_ms": pct(samples, 0.5), "p95_ms": pct(samples, 0.95)}


def batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


# ---------------------------------------------------------------------------- in process (public API)


def run_inprocess(n: int, directory: str) -> dict:
    entities, relations, queries, opens, starts = workload(n)
    store = sm.open_store(os.path.join(directory, f"graph-{n}.db"))
    session = store.session("bench")
    start = time.perf_counter()
    for chunk in batches(entities, ENTITY_BATCH):
        answer = execute(session, "create_entities", {"entities": chunk})
        assert answer.startswith("["), answer[:200]
    for chunk in batches(relations, RELATION_BATCH):
        answer = execute(session, "create_relations", {"relations": chunk})
        assert answer.startswith("["), answer[:200]
    elapsed = time.perf_counter() - start
    result = {
        "nodes": n,
        "edges": len(relations),
        "build_s": round(elapsed, 1),
        "writes_per_s": round((len(entities) + len(relations)) / elapsed),
        "search_nodes": timed([lambda q=q: execute(session, "search_nodes", {"query": q}) for q in queries]),
        "open_nodes": timed([lambda o=o: execute(session, "open_nodes", {"names": o}) for o in opens]),
        "neighbors_depth2": timed(
            [lambda s=s: session.graph.neighbors(s, depth=2, limit=100) for s in starts]
        ),
    }
    store.close()
    return result


# ---------------------------------------------------------------------------- over MCP stdio


def run_stdio(command: str, args: list[str], env: dict[str, str], n: int) -> dict:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    entities, relations, queries, opens, _ = workload(n)
    params = StdioServerParameters(command=command, args=args, env={**os.environ, **env})
    out: dict = {}

    async def timed_calls(session: ClientSession, name: str, argument_list: list[dict]) -> dict[str, float]:
        samples = []
        for arguments in argument_list:
            start = time.perf_counter()
            result = await session.call_tool(name, arguments)
            samples.append(time.perf_counter() - start)
            if result.is_error:
                raise RuntimeError(result.content[0].text[:300])
        return {"p50_ms": pct(samples, 0.5), "p95_ms": pct(samples, 0.95)}

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            start = time.perf_counter()
            for chunk in batches(entities, ENTITY_BATCH):
                await session.call_tool("create_entities", {"entities": chunk})
            for chunk in batches(relations, RELATION_BATCH):
                await session.call_tool("create_relations", {"relations": chunk})
            elapsed = time.perf_counter() - start
            out["build_s"] = round(elapsed, 1)
            out["writes_per_s"] = round((len(entities) + len(relations)) / elapsed)
            out["search_nodes"] = await timed_calls(session, "search_nodes", [{"query": q} for q in queries])
            out["open_nodes"] = await timed_calls(session, "open_nodes", [{"names": o} for o in opens])

    run: Callable[[], Awaitable[None]] = scenario
    anyio.run(run)
    return out


def ratio(theirs: dict, ours: dict) -> dict[str, float]:
    return {
        "writes": round(ours["writes_per_s"] / theirs["writes_per_s"], 1),
        "search_nodes_p50": round(theirs["search_nodes"]["p50_ms"] / ours["search_nodes"]["p50_ms"], 1),
        "open_nodes_p50": round(theirs["open_nodes"]["p50_ms"] / ours["open_nodes"]["p50_ms"], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--no-official", action="store_true")
    options = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as directory:
        results = {}
        for n in (int(s) for s in options.sizes.split(",")):
            results[n] = run_inprocess(n, directory)
            print(json.dumps({"stratamem_in_process": results[n]}), flush=True)
        small = min(results) if results else 10_000
        if options.no_official or shutil.which("npx") is None:
            print("official server comparison skipped (no npx or --no-official)")
            return
        official = run_stdio(
            "npx",
            ["-y", "@modelcontextprotocol/server-memory"],
            {"MEMORY_FILE_PATH": os.path.join(directory, "memory.jsonl")},
            small,
        )
        print(json.dumps({"official_stdio": {"nodes": small, **official}}), flush=True)
        ours = run_stdio(
            sys.executable,
            [
                "-m",
                "stratamem",
                "--db",
                os.path.join(directory, "stdio.db"),
                "mcp",
                "--profile",
                "mcp-memory",
            ],
            {},
            small,
        )
        print(json.dumps({"stratamem_stdio": {"nodes": small, **ours}}), flush=True)
        print(
            json.dumps(
                {
                    "ratio_stdio_vs_official": ratio(official, ours),
                    "ratio_in_process_vs_official": ratio(official, results[small]),
                }
            )
        )


if __name__ == "__main__":
    main()
