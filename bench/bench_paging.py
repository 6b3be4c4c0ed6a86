"""Paging benchmark: one memory_list page, and walking every page, over N memories.

Run: ``python bench/bench_paging.py [--n 20000] [--db URL] [--peer]`` (a temporary SQLite file by default;
``--peer`` lists through a session that also reads a peer agent, the general ordering path).
Nothing here is a unit test and nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import stratamem as sm
from stratamem.models import Memory
from stratamem.tools import execute


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--db", help="store URL (default: a temporary SQLite file)")
    parser.add_argument("--peer", action="store_true")
    args = parser.parse_args()
    url = args.db or str(Path(tempfile.mkdtemp()) / "paging.db")
    with sm.open_store(url) as store:
        now = datetime.now(UTC)
        store.import_memories(
            Memory(
                f"key{i:06d}",
                "x" * 250 + f" word{i}",
                sm.Level.PUBLIC,
                ("t",),
                "core",
                "a",
                None,
                now,
                now,
                f"lineage-{i}",
            )
            for i in range(args.n)
        )
        session = store.session("a", peers=("b",) if args.peer else ())
        started = time.perf_counter()
        text = execute(session, "memory_list", {})
        first_ms = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        execute(session, "memory_list", {})
        again_ms = (time.perf_counter() - started) * 1000
        cursor, seen, pages = json.loads(text)["next_cursor"], 50, 1
        started = time.perf_counter()
        while cursor:
            page = json.loads(execute(session, "memory_list", {"limit": 200, "cursor": cursor}))
            cursor, seen, pages = page["next_cursor"], seen + len(page["memories"]), pages + 1
        walk_ms = (time.perf_counter() - started) * 1000
        print(
            f"{args.n} memories: first page {len(text)} bytes in {first_ms:.1f} ms (the session's first call), "
            f"again {again_ms:.1f} ms; "
            f"{pages} pages ({seen} memories) in {walk_ms:.0f} ms, {walk_ms / max(pages - 1, 1):.1f} ms per page"
        )


if __name__ == "__main__":
    main()
