"""Console benchmark: server time of the console's first pages over a large store.

Run: ``python bench/bench_console.py`` (``--memories 100000 --repeat 30``). The store gets N
SciFact memories (``bench_core.synthetic_memories``) spread over ten agents (60% on the first) and
the four levels, a few hundred soft-deleted ones, sessions with escalations, and one audit event
per memory (as if each had been read once). ``stratamem serve`` runs as a separate process; an
operator opens a console at RESTRICTED and each page is requested ``--repeat`` times over loopback.
The time is the whole HTTP round trip measured by the client (an upper bound of the server's
time). Nothing here asserts on time; the issue's target is a first page under 300 ms.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import bench_core
import httpx2
from bench_core import pct, synthetic_memories
from bench_server import free_port

import stratamem as sm
from stratamem.audit import AuditDraft
from stratamem.server.principals import new_token, token_digest

if os.environ.get("STRATAMEM_BENCH_DATA"):  # the SciFact files elsewhere than ../shared/data
    bench_core.DATA = Path(os.environ["STRATAMEM_BENCH_DATA"])

AGENTS = ["main"] * 6 + [f"agent-{i}" for i in range(1, 5)]
LEVELS = list(sm.Level)


def build(db: str, n: int) -> None:
    rng = random.Random(11)
    memories = [
        dataclasses.replace(m, agent_id=rng.choice(AGENTS), level=rng.choice(LEVELS))
        for m in synthetic_memories(n)
    ]
    with sm.open_store(db) as store:
        t0 = time.perf_counter()
        store.import_memories(memories)
        print(f"imported {n} memories in {time.perf_counter() - t0:.1f} s")
        for agent in sorted(set(AGENTS)):
            for level in LEVELS:
                s = store.session(agent)
                s.escalate(level, f"bench escalation to {level.name}", source="bench")
                for m in memories[:40000]:
                    if m.agent_id == agent and m.level == level and rng.random() < 0.02:
                        s.delete(m.key)
        backend = store.backend  # one transaction for the synthetic read events (bench only)
        t0 = time.perf_counter()
        with backend._tx(write=True) as conn:
            for m in memories:
                backend._append(
                    conn,
                    AuditDraft("get", None, m.agent_id, m.level, (m.key,), (m.level,), (m.lineage_id,)),
                    store.now(),
                )
        print(f"appended {n} audit events in {time.perf_counter() - t0:.1f} s")


def start(db: str, tmp: Path):
    import subprocess

    token = new_token()
    config = tmp / "server.toml"
    config.write_text(
        f'[server]\nlog_level = "warning"\n[[principals]]\nname = "ops"\n'
        f'token_sha256 = "{token_digest(token)}"\nagent = "main"\nclearance = "RESTRICTED"\n'
        "operator = true\n"
    )
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stratamem",
            "--db",
            db,
            "serve",
            "--port",
            str(port),
            "--config",
            str(config),
        ],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        try:
            if httpx2.get(f"{url}/v1/health").status_code == 200:
                return proc, url, token
        except httpx2.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    print(f"stratamem console benchmark — {args.memories} memories, {args.repeat} requests per page")
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs\n")
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        db = str(tmp / "bench.db")
        build(db, args.memories)
        proc, url, token = start(db, tmp)
        try:
            with httpx2.Client(base_url=url, timeout=60) as c:
                auth = {"Authorization": f"Bearer {token}"}
                opened = c.post("/v1/console/open", json={"clearance": "RESTRICTED"}, headers=auth).json()
                h = {**auth, "X-Stratamem-Console": opened["console"]}
                first = c.get("/v1/console/agents/main/memories", headers=h).json()["records"][0]
                audit_next = c.get("/v1/console/audit", headers=h).json()["next"]
                pages = [
                    ("agents", "GET", "/v1/console/agents", None),
                    ("memories of main, first page", "GET", "/v1/console/agents/main/memories", None),
                    (
                        "memories, level=CONFIDENTIAL",
                        "GET",
                        "/v1/console/agents/main/memories?level=CONFIDENTIAL",
                        None,
                    ),
                    (
                        "memories, status=deleted",
                        "GET",
                        "/v1/console/agents/main/memories?status=deleted",
                        None,
                    ),
                    (
                        "memories, tag filter (no match)",
                        "GET",
                        "/v1/console/agents/main/memories?tag=none",
                        None,
                    ),
                    ("memories, text=protein", "GET", "/v1/console/agents/main/memories?text=protein", None),
                    (
                        "versions of one key",
                        "GET",
                        f"/v1/console/agents/main/versions?key={first['key']}",
                        None,
                    ),
                    ("record + lineage", "GET", f"/v1/console/records/{first['ref']}", None),
                    ("sessions", "GET", "/v1/console/sessions", None),
                    ("audit, newest page", "GET", "/v1/console/audit", None),
                    ("audit, second page", "GET", f"/v1/console/audit?before={audit_next}", None),
                    (
                        "search playground",
                        "POST",
                        "/v1/console/agents/main/search",
                        {"query": "protein expression in tumour cells"},
                    ),
                ]
                print(f"\n{'page':38} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
                for label, method, path, body in pages:
                    times = []
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        answer = c.request(method, path, headers=h, json=body)
                        times.append((time.perf_counter() - t0) * 1000)
                        assert answer.status_code == 200, answer.text
                    print(f"{label:38} {pct(times, 50):8.1f} {pct(times, 95):8.1f} {max(times):8.1f}")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
