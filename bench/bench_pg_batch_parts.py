"""Where a PostgreSQL batch's server time goes: ``save_many`` with parts of ``sm_save`` taken out, interleaved.

Run: ``python bench/bench_pg_batch_parts.py`` (``--batches 8``; ``--pg URL`` for a server on this machine,
else an embedded one with its default, durable settings). Each variant is its own store (schema) on one
server, written through one connection: the store's ``sm_save`` as shipped ("full") and copies with the
postings insert, the ``term_stats`` upsert, both, or the audit chain removed. Batches of 1,000 of
``bench_scale``'s synthetic texts go to the variants in turn (order reversed every round, so a change in
the machine's load falls on all of them alike), and the script prints each variant's backend CPU time
per 1,000 records (from ``/proc``: that connection's server process only), wall rate and client CPU.

The differences are what each part costs; "neither" is a batch with no inverted index upkeep at all,
the ceiling any layout of the postings could approach. The variants write incomplete stores: they
exist only for this measurement. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from bench_postgres import start_embedded
from bench_scale import BATCH, texts

import stratamem as sm
from stratamem.storage.postgres import save

POSTINGS = ("  -- Postings: one row per (term, version)", "  -- Document frequencies")
TERM_STATS = ("  INSERT INTO term_stats AS ts", "  IF cardinality(o_id) > 0 THEN\n    DELETE FROM term_stats")
AUDIT = ("  SELECT coalesce(array_agg(e.key ORDER BY e.n)", "  RETURN QUERY")


def without(body: str, part: tuple[str, str]) -> str:
    """``body`` with the statements from ``part[0]`` up to ``part[1]`` removed."""
    start = body.index(part[0])
    return body[:start] + body[body.index(part[1], start) :]


def variants() -> dict[str, str]:
    full = save.SM_SAVE
    return {
        "full": full,
        "no postings": without(full, POSTINGS),
        "no term_stats": without(full, TERM_STATS),
        "neither": without(without(full, POSTINGS), TERM_STATS),
        "no audit chain": without(full, AUDIT),
    }


def backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=8, help="timed batches of 1,000 per variant")
    parser.add_argument(
        "--pg", help="PostgreSQL URL of a server on this machine; default: an embedded server"
    )
    args = parser.parse_args()
    base = args.pg or start_embedded()
    corpus = texts((args.batches + 1) * BATCH, seed=1)
    stores: dict[str, tuple[sm.Store, sm.Session, int]] = {}
    for n, (name, body) in enumerate(variants().items()):
        schema = f"parts_{os.getpid()}_{n}"
        store = sm.open_store(
            f"{base}{'&' if '?' in base else '?'}schema={schema}&pool_min=1&pool_max=1", max_batch=BATCH
        )
        session = store.session("bench")
        session.save("warm-up", "opens the pool")
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"SET search_path TO {schema}, pg_temp")
            admin.execute(body)
        with store.backend._pool.connection() as conn:
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        session.save_many([{"key": f"w{i}", "content": t} for i, t in enumerate(corpus[:BATCH])])
        stores[name] = (store, session, pid)
    used = {name: [0.0, 0.0, 0.0] for name in stores}
    load = os.getloadavg()
    for b in range(args.batches):
        order = list(stores) if b % 2 == 0 else list(stores)[::-1]
        chunk = corpus[(b + 1) * BATCH : (b + 2) * BATCH]
        for name in order:
            store, session, pid = stores[name]
            items = [{"key": f"k{b * BATCH + i}", "content": t} for i, t in enumerate(chunk)]
            server, wall, client = backend_cpu(pid), time.perf_counter(), time.process_time()
            session.save_many(items)
            acc = used[name]
            acc[0] += backend_cpu(pid) - server
            acc[1] += time.perf_counter() - wall
            acc[2] += time.process_time() - client
    per = args.batches
    for name, (server, wall, client) in used.items():
        print(
            f"{name:15s} server CPU {server * 1e3 / per:6.1f} ms per 1,000   client CPU {client * 1e3 / per:5.1f} ms"
            f"   {per * BATCH / wall:6.0f} records/s",
            flush=True,
        )
        stores[name][0].close()
    print(
        f"load average {' '.join(f'{x:.2f}' for x in load)} -> {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
