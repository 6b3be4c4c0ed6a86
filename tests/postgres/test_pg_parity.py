"""Both backends answer alike: the same history gives the same keys, order and scores (bit for bit)
on SQLite and on PostgreSQL, because both index the same Python-stemmed terms and evaluate BM25 with
the same double-precision steps and fixed-point sums."""

from __future__ import annotations

import random

import pytest
from pg_support import Clock, open_pg

import stratamem as sm

COMMON = ["the", "meeting", "project", "notes", "team"]
RARE = ["budget", "payroll", "merger", "picnic", "kubernetes", "invoice", "llama", "harbour", "quartz",
        "running", "runs", "ran", "migration", "audit", "coffee", "tea", "friday", "deadline"]
AGENTS = ["a", "b", "c"]


def history(seed: int) -> list[tuple]:
    rng = random.Random(seed)
    ops = []
    for i in range(220):
        agent, level = rng.choice(AGENTS), rng.choice(list(sm.Level))
        key = f"k{rng.randrange(60)}"
        words = [rng.choice(COMMON) for _ in range(rng.randrange(1, 8))] + \
                [rng.choice(RARE) for _ in range(rng.randrange(0, 4))]
        rng.shuffle(words)
        roll = rng.random()
        if roll < 0.08:
            ops.append(("delete", agent, level, key))
        elif roll < 0.12:
            ops.append(("save", agent, level, key, " ".join(words), 0.0005))  # expires at once
        else:
            ops.append(("save", agent, level, key, " ".join(words), None))
    return ops


def replay(store: sm.Store, ops: list[tuple]) -> None:
    writers: dict[tuple[str, sm.Level], sm.Session] = {}
    for kind, agent, level, key, *rest in ops:
        if (agent, level) not in writers:
            writers[(agent, level)] = store.session(agent)
            writers[(agent, level)].escalate(level, "write")
        w = writers[(agent, level)]
        if kind == "delete":
            try:
                w.delete(key)
            except sm.NotFound:
                pass
        else:
            w.save(key, rest[0], tags=[rest[0].split()[0]], ttl=rest[1])


def observe(store: sm.Store) -> list:
    def mem(m):
        return (m.agent_id, m.key, m.level, m.content, m.tags, m.created_at, m.updated_at)

    out = []
    for level in sm.Level:
        s = store.session("a", peers=("b",))
        s.escalate(level, "observe")
        out.append([mem(m) for m in s.list()])
        out.append([mem(m) for m in s.list(tag="the")])
        out += [mem(m) if m else None for m in (s.get(f"k{i}") for i in range(0, 60, 7))]
        for query in ["budget meeting", "the project notes team", "running", "payroll merger invoice", "",
                      "meeting", "coffee tea friday deadline audit", "zzz nothing"]:
            for n in (1, 5, 100):
                out.append([(mem(h.memory), h.score) for h in s.search(query, max_results=n)])
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sqlite_and_postgres_rank_identically(seed):
    ops = history(seed)
    lite = sm.open_store(":memory:", clock=Clock())
    pg = open_pg()
    try:
        replay(lite, ops)
        replay(pg, ops)
        assert observe(lite) == observe(pg)
    finally:
        lite.close()
        pg.close()
