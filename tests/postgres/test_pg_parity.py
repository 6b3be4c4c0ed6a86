"""Both backends answer alike: the same history gives the same keys, order and scores (bit for bit)
on SQLite and on PostgreSQL, because both index the same Python-stemmed terms and evaluate BM25 with
the same double-precision steps and fixed-point sums."""

from __future__ import annotations

import random

import pytest
from pg_support import Clock, open_pg

import stratamem as sm

COMMON = ["the", "meeting", "project", "notes", "team"]
RARE = [
    "budget",
    "payroll",
    "merger",
    "picnic",
    "kubernetes",
    "invoice",
    "llama",
    "harbour",
    "quartz",
    "running",
    "runs",
    "ran",
    "migration",
    "audit",
    "coffee",
    "tea",
    "friday",
    "deadline",
]
AGENTS = ["a", "b", "c"]


def history(seed: int) -> list[tuple]:
    rng = random.Random(seed)
    ops = []
    for _ in range(220):
        agent, level = rng.choice(AGENTS), rng.choice(list(sm.Level))
        key = f"k{rng.randrange(60)}"
        words = [rng.choice(COMMON) for _ in range(rng.randrange(1, 8))] + [
            rng.choice(RARE) for _ in range(rng.randrange(0, 4))
        ]
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
        for query in [
            "budget meeting",
            "the project notes team",
            "running",
            "payroll merger invoice",
            "",
            "meeting",
            "coffee tea friday deadline audit",
            "zzz nothing",
        ]:
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


def pruning_history() -> list[tuple]:
    """A very common term everywhere and a few rare ones, across agents and levels, with versions some
    sessions cannot see (expired, shadowed) that hold the rare terms: queries mixing them are pruned."""
    rng = random.Random(7)
    ops = []
    for i in range(300):
        agent, level = AGENTS[i % 2], sm.Level.PUBLIC if i % 5 else sm.Level.INTERNAL
        words = ["common"] * rng.randrange(1, 4) + [rng.choice(COMMON) for _ in range(rng.randrange(0, 6))]
        if i % 37 == 0:
            words.append("zebra")
        if i % 41 == 3:
            words += ["quokka"] * rng.randrange(1, 3)
        if i % 97 == 5:
            words.append("narwhal")
        rng.shuffle(words)
        ops.append(("save", agent, level, f"d{i}", " ".join(words), None))
    ops += [
        ("save", "a", sm.Level.PUBLIC, "gone", "common zebra quokka narwhal", 0.0005),  # expires at once
        ("save", "a", sm.Level.PUBLIC, "d3", "common quokka quokka zebra"),  # lower version of d3 ...
        ("save", "a", sm.Level.CONFIDENTIAL, "d3", "common narwhal"),  # ... shadowed at CONFIDENTIAL
        ("save", "b", sm.Level.PUBLIC, "d10", "common filler text"),
        ("delete", "b", sm.Level.PUBLIC, "d10"),
    ]
    return [op if len(op) in (4, 6) else (*op, None) for op in ops]


def test_pruned_queries_rank_identically():
    from unittest import mock

    from stratamem.storage.sql import pruning

    ops = pruning_history()
    lite = sm.open_store(":memory:", clock=Clock())
    pg = open_pg()
    try:
        replay(lite, ops)
        replay(pg, ops)

        def results(store: sm.Store) -> tuple[list, list]:
            splits: list[tuple[int, int]] = []

            def spy(freqs, weights):
                essential = real(freqs, weights)
                splits.append((essential, len(freqs)))
                return essential

            real = pruning.essential_terms
            out = []
            with mock.patch.object(pruning, "essential_terms", spy):
                for level in (sm.Level.PUBLIC, sm.Level.INTERNAL, sm.Level.CONFIDENTIAL):
                    for peers in ((), ("b",)):
                        s = store.session("a", peers=peers)
                        s.escalate(level, "observe")
                        for query in (
                            "common zebra quokka",
                            "common narwhal",
                            "common zebra",
                            "common",
                            "the common project quokka",
                        ):
                            for n in (1, 3, 5, 8, 20, 400):
                                out.append(
                                    [
                                        (h.memory.agent_id, h.memory.key, h.memory.level, h.score)
                                        for h in s.search(query, max_results=n)
                                    ]
                                )
            return out, splits

        lite_out, lite_splits = results(lite)
        pg_out, pg_splits = results(pg)
        assert lite_out == pg_out
        assert lite_splits == pg_splits
        assert any(essential < total for essential, total in pg_splits)  # pruning was attempted
        # and pruning changed nothing: the exhaustive answer on PostgreSQL is the same
        with mock.patch.object(pruning, "essential_terms", lambda freqs, weights: len(freqs)):
            exhaustive, _ = results(pg)
        assert exhaustive == pg_out
    finally:
        lite.close()
        pg.close()
