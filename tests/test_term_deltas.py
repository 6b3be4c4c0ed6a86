"""Single writes' document frequencies in an append-only tail (storage/sqlite/frequency_tail.py): always exact."""

from __future__ import annotations

import os
import random
import sqlite3
from collections import Counter
from datetime import timedelta

import stratamem as sm
from stratamem.storage.sqlite import frequency_tail, postings_tail

WORDS = [f"w{i}" for i in range(40)]


def effective_df(conn: sqlite3.Connection) -> Counter:
    """term_stats plus the tails (decrements, and a document per postings-tail row), per (term, agent,
    level), zeros left out."""
    totals: Counter = Counter()
    for term, agent, level, df in conn.execute("SELECT term, agent_id, level, df FROM term_stats"):
        totals[(term, agent, level)] += df
    for term, agent, level in conn.execute("SELECT term, agent_id, level FROM postings_tail"):
        totals[(term, agent, level)] += 1
    for agent, level, delta, terms in conn.execute("SELECT agent_id, level, delta, terms FROM term_deltas"):
        for term in terms.split(" "):
            totals[(term, agent, level)] += delta
    return Counter({k: v for k, v in totals.items() if v})


def recount(conn: sqlite3.Connection) -> Counter:
    return Counter(
        {
            (t, a, lvl): n
            for t, a, lvl, n in conn.execute(
                "SELECT term, agent_id, level, count(*) FROM (SELECT term, agent_id, level FROM postings "
                "UNION ALL SELECT term, agent_id, level FROM postings_tail) GROUP BY term, agent_id, level"
            )
        }
    )


def test_frequencies_stay_exact_through_saves_replacements_deletes_and_folds(tmp_path, monkeypatch):
    monkeypatch.setattr(frequency_tail, "FOLD_AT", 7)  # fold often, at odd moments
    rng = random.Random(5)
    with sm.open_store(str(tmp_path / "d.db")) as store:
        sessions = [store.session("a"), store.session("b")]
        sessions[1].escalate("INTERNAL", "x")
        conn = store.backend._conn
        for step in range(300):
            s = rng.choice(sessions)
            key = f"k{rng.randrange(25)}"
            if rng.random() < 0.2:
                try:
                    s.delete(key)
                except sm.errors.NotFound:
                    pass
            elif rng.random() < 0.1:
                s.save_many(
                    [
                        {"key": f"b{rng.randrange(25)}", "content": " ".join(rng.sample(WORDS, 5))}
                        for _ in range(4)
                    ]
                )
            else:
                s.save(key, " ".join(rng.sample(WORDS, rng.randint(1, 8))))
            if step % 37 == 0:
                assert effective_df(conn) == recount(conn)
        assert effective_df(conn) == recount(conn)
        assert conn.execute("SELECT count(*) FROM term_deltas").fetchone()[0] < 7


def test_search_scores_equal_with_the_tail_folded_or_not(tmp_path):
    """Decrements (versions of ``postings`` deleted) and single saves' postings-tail rows both pending,
    then folded: the same scores."""
    with sm.open_store(str(tmp_path / "s.db")) as store:
        s = store.session("a")
        text = [f"{WORDS[i % 7]} {WORDS[i % 11]} harbour {WORDS[i % 3]}" for i in range(90)]
        s.save_many([{"key": f"k{i}", "content": text[i]} for i in range(60)])  # indexed in postings
        for i in range(0, 60, 4):
            s.delete(f"k{i}")
        for i in range(60, 90):
            s.save(f"k{i}", text[i])  # indexed in the postings tail
        conn = store.backend._conn
        queries = ["w1 harbour", "w2 w5", "w10 w0 w6"]
        before = [[(h.memory.key, h.score) for h in s.search(q, 10)] for q in queries]
        assert conn.execute("SELECT count(*) FROM term_deltas").fetchone()[0] > 0
        assert conn.execute("SELECT count(*) FROM postings_tail").fetchone()[0] > 0
        with store.backend._tx(write=True) as write:
            frequency_tail.fold(write)
            postings_tail.fold(write)
        assert conn.execute("SELECT count(*) FROM term_deltas").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM postings_tail").fetchone()[0] == 0
        assert [[(h.memory.key, h.score) for h in s.search(q, 10)] for q in queries] == before


def test_purge_folds_the_tail_and_leaves_no_empty_frequency(tmp_path):
    with sm.open_store(str(tmp_path / "p.db")) as store:
        s = store.session("a")
        s.save("gone", "uniquezebra words")
        s.save("kept", "other words")
        s.delete("gone")
        store.purge(before=store.now() + timedelta(seconds=1))
        conn = store.backend._conn
        assert conn.execute("SELECT count(*) FROM term_deltas").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM term_stats WHERE df <= 0").fetchone()[0] == 0
        assert (
            conn.execute("SELECT count(*) FROM term_stats WHERE term LIKE 'uniquezebra%'").fetchone()[0] == 0
        )


def test_a_single_save_dirties_few_pages(tmp_path):
    """The write cost that matters is pages committed: document frequencies no longer add one per term."""
    path = str(tmp_path / "w.db")
    vocabulary = [f"v{i}q" for i in range(5000)]  # term_stats spans dozens of pages
    rng = random.Random(3)
    with sm.open_store(path) as store:
        s = store.session("a")
        for b in range(4):
            s.save_many(
                [{"key": f"w{b}-{i}", "content": " ".join(rng.sample(vocabulary, 15))} for i in range(1000)]
            )
        conn = store.backend._conn
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for i in range(40):
            s.save(f"k{i}", " ".join(rng.sample(vocabulary, 15)))
        frames = os.path.getsize(path + "-wal") / (4096 + 24) / 40
    # about 10 now: the tail's rows are the frequencies too (no frequency row) and a store without an
    # embedder writes no pending-vector mark (three pages); 14 with both; 30 when each term's posting
    # went to its own page of postings; 41 when each term's frequency was its own upsert too
    assert frames < 12, frames
