"""The least a durable, audited, searchable SQLite write can cost, against bare FTS5 in the same run.

Run: ``python bench/bench_write_floor.py`` (``--n 3000 --batches 10 --rounds 5``).

Issue 14 asks a single durable save to cost at most 2x a bare FTS5 insert + commit, and a batch at most 6x
bare FTS5's batched inserts and 30,000 memories a second. This script asks what *any* layout would have to
pay for what the contract requires of a write, by building that write up from nothing with raw ``sqlite3``
(prepared statements, no stratamem layers) and the product's own pure functions for the parts that are not
SQL (validation, the analyser, the audit hash). Each step adds one requirement to the previous one:

single save (each its own transaction, ``synchronous=NORMAL``, WAL — as bare FTS5):
  row        the record's row and the unique index that finds the version a save replaces; commit
  +session   the session's row read inside the write transaction (the live taint a save is stored at)
  +replace   the live versions of (agent, key) looked up (a same-level version is updated in place)
  +audit     the hash-chained audit event: canonical JSON + SHA-256, its row, the chain head
  +search    the analyser's terms, appended to an unindexed postings tail (searchable at once)
  +stats     the (agent, level) document count and length BM25 reads (visible-only statistics)
  +reads     the three indexes other reads stand on: an agent's memories by recency, the console's history
             of a key (deleted versions too), an agent's or session's audit pages

Nothing else stratamem writes is in the floor: no vector mark, and the tail is never folded into a
term-ordered index (so it would not stay searchable at scale) — every omission makes the floor cheaper
than a real store, never dearer.

batch of 1,000 (one transaction): every item validated, analysed (each distinct word stemmed once), one
audit event each, the rows and audit rows inserted with ``executemany`` — and *no* inverted index at all.

``--grown 0 200000`` also times 1,000 stratamem single saves into a store that already holds that many
memories (written in batches first), with the WAL pages each commits: what a save costs as a store grows.

Times are CPU seconds (``time.process_time``): on a shared machine wall time mostly measures the wait for a
core. Every round runs every variant once, in a rotated order; the script prints each round, the median
and the best ratio against bare FTS5, and the load average at start and end. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import bench_scale as scale
from bench_single_save import fts_run, ours_run, wal_pages

import stratamem as sm
from stratamem.audit import GENESIS, AuditDraft, seal_many
from stratamem.levels import Level
from stratamem.save_many import check_batch
from stratamem.text import Analyzer

STEPS = ("row", "+session", "+replace", "+audit", "+search", "+stats", "+reads")
# what "+reads" adds: the indexes of the product's schema that serve reads other than get and search
READ_INDEXES = (
    "CREATE INDEX memories_recent ON memories(agent_id, updated_us) WHERE deleted_us IS NULL",
    "CREATE INDEX memories_console ON memories(agent_id, key, level DESC, id)",
    "CREATE INDEX audit_session ON audit(session_id, seq)",
)

SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, taint INTEGER NOT NULL);
INSERT INTO sessions VALUES ('s1', 'bench', 0);
CREATE TABLE memories (id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, key TEXT NOT NULL, level INTEGER NOT NULL,
    content TEXT NOT NULL, tags TEXT NOT NULL, category TEXT NOT NULL, session_id TEXT, created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL, lineage_id TEXT NOT NULL, expires_us INTEGER, deleted_us INTEGER,
    length INTEGER NOT NULL);
CREATE UNIQUE INDEX memories_live ON memories(agent_id, key, level) WHERE deleted_us IS NULL;
CREATE TABLE audit (seq INTEGER PRIMARY KEY, at_us INTEGER NOT NULL, session_id TEXT, agent_id TEXT,
    taint INTEGER NOT NULL, operation TEXT NOT NULL, keys TEXT NOT NULL, levels TEXT NOT NULL, lineage TEXT NOT NULL,
    outcome TEXT NOT NULL, detail TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tail (id INTEGER PRIMARY KEY, term TEXT NOT NULL, memory_id INTEGER NOT NULL, tf INTEGER NOT NULL,
    agent_id TEXT NOT NULL, level INTEGER NOT NULL, length INTEGER NOT NULL);
CREATE TABLE part_stats (agent_id TEXT NOT NULL, level INTEGER NOT NULL, n INTEGER NOT NULL,
    total_len INTEGER NOT NULL, PRIMARY KEY (agent_id, level)) WITHOUT ROWID;
"""
INSERT_MEMORY = (
    "INSERT INTO memories(agent_id, key, level, content, tags, category, session_id, created_us, updated_us, "
    "lineage_id, expires_us, length) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
)
INSERT_AUDIT = "INSERT INTO audit VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
HEAD = (
    "INSERT INTO meta(name, value) VALUES ('head', ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value"
)
STATS = (
    "INSERT INTO part_stats VALUES (?,?,?,?) ON CONFLICT(agent_id, level) "
    "DO UPDATE SET n = n + excluded.n, total_len = total_len + excluded.total_len"
)


def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(SCHEMA)
    return conn


def floor_single(path: str, items: list[str], step: int) -> float:
    """CPU seconds per save of the floor up to ``STEPS[step]``."""
    conn, analyzer = connect(path), Analyzer()
    for index in READ_INDEXES if step >= 6 else ():
        conn.execute(index)
    prev, seq, now = GENESIS, 0, datetime.now(UTC)
    cpu = time.process_time()
    for i, text in enumerate(items):
        key, now_us = f"k{i}", time.time_ns() // 1000
        terms, length = analyzer.document_terms(key, text, ()) if step >= 4 else ({}, len(text.split()))
        conn.execute("BEGIN IMMEDIATE")
        agent, level = "bench", 0
        if step >= 1:
            agent, level = conn.execute("SELECT agent_id, taint FROM sessions WHERE id = 's1'").fetchone()
        if step >= 2:
            conn.execute(
                "SELECT id, level FROM memories WHERE agent_id = ? AND key = ? AND deleted_us IS NULL",
                (agent, key),
            ).fetchall()
        lineage = f"lineage-{i}"
        mem_id = conn.execute(
            INSERT_MEMORY,
            (agent, key, level, text, "[]", "core", "s1", now_us, now_us, lineage, None, length),
        ).lastrowid
        if step >= 3:
            draft = AuditDraft("save", "s1", agent, Level(level), (key,), (Level(level),), (lineage,))
            (event,) = seal_many(seq + 1, now, [draft], prev)
            conn.execute(
                INSERT_AUDIT,
                (event.seq, now_us, "s1", agent, level, "save", f'["{key}"]', '["PUBLIC"]', f'["{lineage}"]', "ok",
                 "{}", prev, event.hash),
            )  # fmt: skip
            conn.execute(HEAD, (f"{event.seq}:{event.hash}",))
            seq, prev = event.seq, event.hash
        if step >= 4:
            rows = [value for term, tf in terms.items() for value in (term, mem_id, tf, agent, level, length)]
            conn.execute(f"INSERT INTO tail(term, memory_id, tf, agent_id, level, length) VALUES {','.join(['(?,?,?,?,?,?)'] * len(terms))}", rows)  # fmt: skip
        if step >= 5:
            conn.execute(STATS, (agent, level, 1, length))
        conn.execute("COMMIT")
    cpu = time.process_time() - cpu
    conn.close()
    return cpu / len(items)


def batches(items: list[str]) -> list[list[dict[str, object]]]:
    return [
        [{"key": f"k{b + i}", "content": text} for i, text in enumerate(items[b : b + scale.BATCH])]
        for b in range(0, len(items), scale.BATCH)
    ]


def fts_batched(path: str, items: list[str]) -> float:
    conn = scale.fts(path)
    cpu = time.process_time()
    for batch in batches(items):
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO docs(key, content) VALUES (?, ?)", [(i["key"], i["content"]) for i in batch]
        )
        conn.execute("COMMIT")
    cpu = time.process_time() - cpu
    conn.close()
    return cpu / len(items)


def floor_batched(path: str, items: list[str]) -> float:
    """Validated, analysed, one audit event each, rows and audit rows inserted: no inverted index at all."""
    conn, analyzer = connect(path), Analyzer()
    prev, seq, now = GENESIS, 0, datetime.now(UTC)
    cpu = time.process_time()
    for batch in batches(items):
        checked = check_batch(batch, scale.BATCH, 1 << 20)
        analysed = analyzer.document_terms_many((c.key, c.content, c.tags) for c in checked)
        now_us = time.time_ns() // 1000
        conn.execute("BEGIN IMMEDIATE")
        agent, level = conn.execute("SELECT agent_id, taint FROM sessions WHERE id = 's1'").fetchone()
        first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM memories").fetchone()[0]
        rows = [
            (first + n, agent, c.key, level, c.content, "[]", c.category, "s1", now_us, now_us, f"lineage-{first + n}",
             None, length)
            for n, (c, (_, length)) in enumerate(zip(checked, analysed, strict=True))
        ]  # fmt: skip
        conn.executemany(
            INSERT_MEMORY.replace("(agent_id", "(id, agent_id").replace("VALUES (?", "VALUES (?,?"), rows
        )
        drafts = [
            AuditDraft("save", "s1", agent, Level(level), (r[2],), (Level(level),), (r[10],)) for r in rows
        ]
        events = seal_many(seq + 1, now, drafts, prev)
        conn.executemany(
            INSERT_AUDIT,
            [(e.seq, now_us, "s1", agent, level, "save", f'["{e.keys[0]}"]', '["PUBLIC"]', f'["{e.lineage_ids[0]}"]',
              "ok", "{}", e.prev_hash, e.hash) for e in events],
        )  # fmt: skip
        seq, prev = events[-1].seq, events[-1].hash
        conn.execute(HEAD, (f"{seq}:{prev}",))
        conn.execute("COMMIT")
    cpu = time.process_time() - cpu
    conn.close()
    return cpu / len(items)


def ours_batched(path: str, items: list[str]) -> float:
    with sm.open_store(path, max_batch=scale.BATCH, search_mode=scale.MODE) as store:
        session = store.session("bench")
        cpu = time.process_time()
        for batch in batches(items):
            session.save_many(batch)
        return (time.process_time() - cpu) / len(items)


def grown_single(path: str, size: int, items: list[str]) -> tuple[float, float]:
    """(CPU seconds, WAL pages) per stratamem single save into a store already holding ``size`` memories."""
    texts = scale.texts(size, seed=7)
    store = sm.open_store(path, max_batch=scale.BATCH, search_mode=scale.MODE)
    session = store.session("bench")
    for batch in batches(texts):
        session.save_many(batch)
    conn = store.backend._conn  # type: ignore[attr-defined]
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    cpu = time.process_time()
    for i, text in enumerate(items):
        session.save(f"new{i}", text)
    cpu = time.process_time() - cpu
    pages = len(wal_pages(path + "-wal"))
    store.close()
    return cpu / len(items), pages / len(items)


def frame_cost(path: str, frames: int = 20_000) -> float:
    """CPU seconds of writing one WAL frame as SQLite does: a 24-byte header and a 4,096-byte page, two pwrites."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    header, page = b"h" * 24, b"p" * 4096
    cpu = time.process_time()
    for i in range(frames):
        os.pwrite(fd, header, i * 4120)
        os.pwrite(fd, page, i * 4120 + 24)
    cpu = time.process_time() - cpu
    os.close(fd)
    return cpu / frames


def variants(single: list[str], many: list[str]) -> dict[str, Callable[[str], float]]:
    found: dict[str, Callable[[str], float]] = {"FTS5 single": lambda p: fts_run(p, single)[1]}
    for step, name in enumerate(STEPS):
        found[f"floor {name}"] = lambda p, step=step: floor_single(p, single, step)  # type: ignore[misc]
    found["stratamem save"] = lambda p: ours_run(p, single)[1]
    found["FTS5 batched"] = lambda p: fts_batched(p, many)
    found["floor batch"] = lambda p: floor_batched(p, many)
    found["stratamem save_many"] = lambda p: ours_batched(p, many)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=3_000, help="single saves per variant and round")
    parser.add_argument("--batches", type=int, default=10, help="batches of 1,000 per variant and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--grown",
        type=int,
        nargs="*",
        default=[],
        help="also time single saves into stores already holding these many memories (e.g. 0 200000)",
    )
    args = parser.parse_args()
    single, many = scale.texts(args.n, seed=3), scale.texts(args.batches * scale.BATCH, seed=5)
    runs = variants(single, many)
    names = list(runs)
    cpu: dict[str, list[float]] = {name: [] for name in names}
    ratio: dict[str, list[float]] = {name: [] for name in names}
    print("load average at start:", os.getloadavg())
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        with tempfile.TemporaryDirectory() as tmp:
            got = {name: runs[name](os.path.join(tmp, f"{n}.db")) for n, name in enumerate(order)}
        for name in names:
            base = got["FTS5 batched" if "batch" in name or "many" in name else "FTS5 single"]
            cpu[name].append(got[name])
            ratio[name].append(got[name] / base)
        print(f"round {r}: " + " | ".join(f"{name} {got[name] * 1e6:.0f}" for name in names))
    print(f"\nCPU per memory over {args.rounds} rounds (us), and against bare FTS5 in the same round:")
    print(f"  {'':22s} {'median':>8s} {'min':>8s} {'per s':>9s} {'ratio median':>13s} {'ratio min':>10s}")
    for name in names:
        med = statistics.median(cpu[name])
        print(
            f"  {name:22s} {med * 1e6:8.1f} {min(cpu[name]) * 1e6:8.1f} {1 / med:9,.0f} "
            f"{statistics.median(ratio[name]):12.2f}x {min(ratio[name]):9.2f}x"
        )
    with tempfile.TemporaryDirectory() as tmp:
        frame = statistics.median(frame_cost(os.path.join(tmp, "frames")) for _ in range(3))
    print(
        f"one WAL frame (page) written: {frame * 1e6:.1f} us CPU — every page a commit dirtied costs this much"
    )
    for size in args.grown:
        with tempfile.TemporaryDirectory() as tmp:
            cpu_one, pages = grown_single(os.path.join(tmp, "grown.db"), size, single[:1_000])
        print(
            f"stratamem single save into a store of {size:,}: {cpu_one * 1e6:.0f} us CPU, {pages:.1f} WAL pages"
        )
    print("load average at end:", os.getloadavg())


if __name__ == "__main__":
    main()
