"""Knowledge-graph benchmark: the official MCP memory server's workload, on both servers, same calls.

Run: ``python bench/bench_graph.py`` (``--sizes 10000`` for the small graph only, ``--no-official`` to skip the
comparison, ``--bulk-batch 1000`` for the large-graph build). What each row measures:

- ``bulk``: the graph is built with ``create_entities`` calls of 100 entities (two 8-word observations
  each), then ``create_relations`` calls of 300 relations (~3 per node): writes/s over the whole build.
- ``agent``: on the built graph, 200 ``create_entities`` calls of 3 new entities and 200
  ``create_relations`` calls of 3 relations, each timed (p50/p95 per call) — the size a model sends.
  The official server reads and rewrites its whole JSON Lines file on every call, so its cost per call
  grows with the graph, not with the call; per-call size is what decides which of the two rows matters.
- ``search_nodes`` (200 two-word queries; ``search_nodes_1word``: 200 one-word queries), ``open_nodes`` (200 calls
  of 3 names): p50/p95 per call, with the mean answer size (entities, relations, characters of the text):
  stratamem ranks any-word matches and answers at most 100 with the relations touching them; the official
  server answers every entity containing the query string, with the relations touching them.
- ``neighbors`` depth 2 (in process only; the official server has no such call), limit 100.

Every stratamem call goes through ``tools.execute`` (argument checks, the policy gate with the poisoning
scanner, the audit), in process and over stdio (``stratamem mcp --profile mcp-memory``); the official
``@modelcontextprotocol/server-memory`` runs over stdio with the ``mcp`` client when ``npx`` can fetch it.
Ratios compare runs made minutes apart on the same machine; print ``uptime`` with them. Nothing here is a
test; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import itertools
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


AGENT_CALLS = 200
AGENT_SIZE = 3


class Workload:
    """Entities, relations (~3 per node), agent-sized calls, search queries, open_nodes lists, starts."""

    def __init__(self, n: int, seed: int = 7) -> None:
        rng = random.Random(seed)
        words = vocabulary(rng)
        cumulative = list(itertools.accumulate(1 / (i + 1) for i in range(len(words))))

        def pick(k: int) -> list[str]:  # Zipf; cum_weights once, not per call (same draws as weights=)
            return rng.choices(words, cum_weights=cumulative, k=k)

        def entity(name: str) -> dict:
            return {
                "name": name,
                "entityType": rng.choice(TYPES),
                "observations": [" ".join(pick(8)), " ".join(pick(8))],
            }

        self.entities = [entity(f"{pick(1)[0]}-{i}") for i in range(n)]
        names = [e["name"] for e in self.entities]
        self.relations: list[dict] = []
        seen: set[tuple[int, int, str]] = set()
        while len(self.relations) < 3 * n:
            a, b, r = rng.randrange(n), rng.randrange(n), rng.choice(RELATIONS)
            if a != b and (a, b, r) not in seen:
                seen.add((a, b, r))
                self.relations.append({"from": names[a], "to": names[b], "relationType": r})
        self.agent_entities = [
            [entity(f"{pick(1)[0]}-new-{c}-{j}") for j in range(AGENT_SIZE)] for c in range(AGENT_CALLS)
        ]
        self.agent_relations = [
            [
                {"from": rng.choice(names), "to": rng.choice(names), "relationType": f"agent_{c}_{j}"}
                for j in range(AGENT_SIZE)
            ]
            for c in range(AGENT_CALLS)
        ]
        self.queries = [" ".join(rng.sample(words[:2000], 2)) for _ in range(200)]
        self.words = rng.sample(words[:2000], 200)
        self.opens = [rng.sample(names, 3) for _ in range(200)]
        self.starts = rng.sample(names, 200)


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2)


def summary(samples: list[float], sizes: list[tuple[int, int, int]] | None = None) -> dict[str, float]:
    """p50/p95 and, for reads, the mean answer size: entities, relations and characters of the text."""
    out = {"p50_ms": pct(samples, 0.5), "p95_ms": pct(samples, 0.95)}
    if sizes is not None:
        for i, key in enumerate(("mean_entities", "mean_relations", "mean_chars")):
            out[key] = round(sum(size[i] for size in sizes) / len(sizes), 1)
    return out


def batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def entity_count(text: str) -> int:
    return answer_size(text)[0]


def answer_size(text: str) -> tuple[int, int, int]:
    """(entities, relations, characters) of an answer; raises on an error answer."""
    data = json.loads(text)
    if isinstance(data, dict) and "error" in data:
        raise RuntimeError(text[:300])
    if not isinstance(data, dict):
        return len(data), 0, len(text)
    return len(data.get("entities", [])), len(data.get("relations", [])), len(text)


# ---------------------------------------------------------------------------- one scenario, two transports

Call = Callable[[str, dict], Awaitable[str]]


async def scenario(
    call: Call, w: Workload, entity_batch: int, relation_batch: int, clock: Callable[[], float] | None = None
) -> dict:
    """The same calls, in the same order, whichever server answers them.

    ``clock`` reads the CPU seconds the server has used (this process in process, the server's processes
    over stdio): CPU time per call is far less inflated than wall time when the machine is shared.
    """
    cpu: dict[str, list[float]] = {}
    cpu_now = clock or (lambda: 0.0)

    async def timed(
        name: str, argument_list: list[dict], tag: str = ""
    ) -> tuple[list[float], list[tuple[int, int, int]]]:
        samples, sizes = [], []
        cpu[name + tag] = []
        for arguments in argument_list:
            start, start_cpu = time.perf_counter(), cpu_now()
            text = await call(name, arguments)
            samples.append(time.perf_counter() - start)
            cpu[name + tag].append(cpu_now() - start_cpu)
            sizes.append(answer_size(text))
        return samples, sizes

    def with_cpu(name: str, row: dict) -> dict:
        """Mean CPU per call over the phase (a server's CPU clock ticks in 10 ms steps: no percentiles)."""
        mean = sum(cpu[name]) / len(cpu[name]) * 1000
        return {**row, "cpu_mean_ms": round(mean, 2)} if clock is not None else row

    start, start_cpu = time.perf_counter(), cpu_now()
    for chunk in batches(w.entities, entity_batch):
        entity_count(await call("create_entities", {"entities": chunk}))
    for chunk in batches(w.relations, relation_batch):
        entity_count(await call("create_relations", {"relations": chunk}))
    elapsed, elapsed_cpu = time.perf_counter() - start, cpu_now() - start_cpu
    out: dict = {
        "nodes": len(w.entities),
        "edges": len(w.relations),
        "bulk": {
            "entities_per_call": entity_batch,
            "relations_per_call": relation_batch,
            "build_s": round(elapsed, 1),
            "writes_per_s": round((len(w.entities) + len(w.relations)) / elapsed),
        },
    }
    if clock is not None:
        out["bulk"]["cpu_s"] = round(elapsed_cpu, 1)
        out["bulk"]["writes_per_cpu_s"] = round((len(w.entities) + len(w.relations)) / elapsed_cpu)
    made, _ = await timed("create_entities", [{"entities": c} for c in w.agent_entities])
    related, _ = await timed("create_relations", [{"relations": c} for c in w.agent_relations])
    out["agent"] = {
        "per_call": AGENT_SIZE,
        "create_entities": with_cpu("create_entities", summary(made)),
        "create_relations": with_cpu("create_relations", summary(related)),
        "writes_per_s": round(AGENT_SIZE * (len(made) + len(related)) / (sum(made) + sum(related))),
    }
    out["search_nodes"] = with_cpu(
        "search_nodes", summary(*await timed("search_nodes", [{"query": q} for q in w.queries]))
    )
    out["search_nodes_1word"] = with_cpu(
        "search_nodes_1word", summary(*await timed("search_nodes", [{"query": q} for q in w.words], "_1word"))
    )
    out["open_nodes"] = with_cpu(
        "open_nodes", summary(*await timed("open_nodes", [{"names": o} for o in w.opens]))
    )
    return out


def run_inprocess(n: int, directory: str, entity_batch: int, relation_batch: int) -> dict:
    import anyio

    w = Workload(n)
    store = sm.open_store(os.path.join(directory, f"graph-{n}.db"))
    session = store.session("bench")

    async def call(name: str, arguments: dict) -> str:
        return execute(session, name, arguments) or ""

    async def run() -> dict:
        return await scenario(call, w, entity_batch, relation_batch, time.process_time)

    result = anyio.run(run)
    samples, cpu = [], []
    for start in w.starts:
        began, began_cpu = time.perf_counter(), time.process_time()
        session.graph.neighbors(start, depth=2, limit=100)
        samples.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    # CPU time of this process: what the call costs, less inflated than wall time on a shared machine
    result["neighbors_depth2"] = {
        **summary(samples),
        "cpu_p50_ms": pct(cpu, 0.5),
        "cpu_p95_ms": pct(cpu, 0.95),
    }
    store.close()
    return result


def server_cpu() -> Callable[[], float] | None:
    """CPU seconds used so far by this process's children (the stdio server and what it spawned)."""
    try:
        import psutil
    except ImportError:
        return None
    me = psutil.Process()

    def used() -> float:
        total = 0.0
        for child in me.children(recursive=True):
            try:
                times = child.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                continue
        return total

    return used


def run_stdio(command: str, args: list[str], env: dict[str, str], n: int) -> dict:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    w = Workload(n)
    params = StdioServerParameters(command=command, args=args, env={**os.environ, **env})

    async def run() -> dict:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def call(name: str, arguments: dict) -> str:
                result = await session.call_tool(name, arguments)
                if result.is_error:
                    raise RuntimeError(result.content[0].text[:300])
                return result.content[0].text

            return await scenario(call, w, ENTITY_BATCH, RELATION_BATCH, server_cpu())

    return anyio.run(run)


def ratio(theirs: dict, ours: dict) -> dict[str, float]:
    """How many times faster stratamem is (wall time; CPU time too when both were measured)."""

    def faster(key: str, sub: str = "p50_ms") -> float:
        return round(theirs[key][sub] / max(ours[key][sub], 1e-6), 1)

    def agent_cpu(row: dict) -> float:
        return (
            row["agent"]["create_entities"]["cpu_mean_ms"] + row["agent"]["create_relations"]["cpu_mean_ms"]
        )

    out = {
        "bulk_writes": round(ours["bulk"]["writes_per_s"] / theirs["bulk"]["writes_per_s"], 1),
        "agent_writes": round(ours["agent"]["writes_per_s"] / theirs["agent"]["writes_per_s"], 1),
        "search_nodes_p50": faster("search_nodes"),
        "search_nodes_1word_p50": faster("search_nodes_1word"),
        "open_nodes_p50": faster("open_nodes"),
    }
    if "cpu_s" in theirs["bulk"] and "cpu_s" in ours["bulk"]:
        out["bulk_writes_cpu"] = round(theirs["bulk"]["cpu_s"] / max(ours["bulk"]["cpu_s"], 1e-6), 1)
        out["agent_writes_cpu"] = round(agent_cpu(theirs) / max(agent_cpu(ours), 1e-6), 1)
        out["search_nodes_cpu"] = faster("search_nodes", "cpu_mean_ms")
        out["search_nodes_1word_cpu"] = faster("search_nodes_1word", "cpu_mean_ms")
        out["open_nodes_cpu"] = faster("open_nodes", "cpu_mean_ms")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--no-official", action="store_true")
    parser.add_argument(
        "--bulk-batch",
        type=int,
        default=1000,
        help="entities and relations per call when building graphs larger than 10k (the API's maximum)",
    )
    options = parser.parse_args()
    print(machine(), flush=True)
    print("load average at start:", os.getloadavg(), flush=True)
    with tempfile.TemporaryDirectory() as directory:
        results = {}
        for n in (int(s) for s in options.sizes.split(",")):
            entity_batch, relation_batch = (
                (ENTITY_BATCH, RELATION_BATCH) if n <= 10_000 else (options.bulk_batch, options.bulk_batch)
            )
            results[n] = run_inprocess(n, directory, entity_batch, relation_batch)
            print(json.dumps({"stratamem_in_process": results[n], "load": os.getloadavg()}), flush=True)
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
        print(json.dumps({"official_stdio": official, "load": os.getloadavg()}), flush=True)
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
        print(json.dumps({"stratamem_stdio": ours, "load": os.getloadavg()}), flush=True)
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
