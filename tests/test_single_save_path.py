"""The SQLite single save's cheaper path: the postings tail counts its own document frequencies, a store
without an embedder writes no pending-vector marks, the fold decision reads the tail inside the write
transaction, and all of it holds with several processes writing one file."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_term_deltas import effective_df, recount  # what readers add up; a recount

import stratamem as sm
from stratamem import Level, audit
from stratamem.audit import AuditDraft
from stratamem.embed.hashing import HashEmbedder
from stratamem.storage.sqlite import frequency_tail, postings_tail

WORDS = [f"w{i}" for i in range(30)]


def test_a_single_save_writes_no_frequency_row_and_the_fold_counts_the_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(postings_tail, "FOLD_AT", 20)
    with sm.open_store(str(tmp_path / "t.db")) as store:
        s = store.session("a")
        conn = store.backend._conn
        s.save("k0", "w1 w2 w3")
        assert conn.execute("SELECT count(*) FROM term_deltas").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM term_stats").fetchone()[0] == 0
        assert effective_df(conn) == recount(conn)
        s.save("k0", "w1 w4")  # replacing a version of the tail: its rows (and counts) go, no decrement
        assert conn.execute("SELECT count(*) FROM term_deltas").fetchone()[0] == 0
        for i in range(1, 8):
            s.save(f"k{i}", "w1 w2 w5")  # the tail reaches 20 rows: folded, counts into term_stats
        assert conn.execute("SELECT count(*) FROM postings_tail").fetchone()[0] < 20
        assert conn.execute("SELECT df FROM term_stats WHERE term = 'w1'").fetchone()[0] >= 5
        s.delete("k1")  # a version of postings: one decrement row
        assert conn.execute("SELECT count(*) FROM term_deltas").fetchone()[0] == 1
        assert effective_df(conn) == recount(conn)


def test_the_tail_folds_at_its_bound_when_two_connections_write_it(tmp_path, monkeypatch):
    """Two stores on one file (two connections, as two processes have): the fold decision is taken from
    the tail as it is inside each write, so the tail never outgrows its bound and counts stay exact."""
    monkeypatch.setattr(postings_tail, "FOLD_AT", 25)
    monkeypatch.setattr(frequency_tail, "FOLD_AT", 5)
    path = str(tmp_path / "two.db")
    with sm.open_store(path) as one, sm.open_store(path) as two:
        sessions = [one.session("a"), two.session("a"), two.session("b")]
        conn = one.backend._conn
        for i in range(120):
            s = sessions[i % 3]
            words = " ".join(WORDS[(i * 7 + j) % 30] for j in range(1 + i % 6))
            if i % 10 == 9:
                s.save_many([{"key": f"b{i}-{j}", "content": words} for j in range(3)])
            elif i % 7 == 6:
                try:
                    s.delete(f"k{(i - 3) % 20}")
                except sm.NotFound:
                    pass
            else:
                s.save(f"k{i % 20}", words)
            # the write that reaches the bound folds: never more rows than the bound plus one write's
            assert conn.execute("SELECT count(*) FROM postings_tail").fetchone()[0] < 25 + 10
            assert effective_df(conn) == recount(conn)
        hits = [(h.memory.key, h.score) for h in sessions[0].search("w1 w8 w15", 10)]
        with one.backend._tx(write=True) as write:
            postings_tail.fold(write)
            frequency_tail.fold(write)
        assert [(h.memory.key, h.score) for h in sessions[0].search("w1 w8 w15", 10)] == hits


def test_a_store_whose_tail_rows_were_also_counted_as_deltas_is_upgraded_on_open(tmp_path):
    """Before, each tail row's document had its +1 in term_deltas too; opening such a store moves the
    tail so nothing is counted twice, and searches answer as they did."""
    path = str(tmp_path / "old.db")
    with sm.open_store(path) as store:
        s = store.session("a")
        for i in range(12):
            s.save(f"k{i}", " ".join(WORDS[(i + j) % 9] for j in range(4)))
        s.save_many([{"key": f"b{i}", "content": f"w{i % 5} w20 w21"} for i in range(6)])
        s.delete("b0")
        before = [[(h.memory.key, h.score) for h in s.search(q, 10)] for q in ("w1 w20", "w3", "w0 w8")]
        conn = store.backend._conn
        # the old layout: every tail document's +1 also pending in term_deltas, no upgrade mark
        with store.backend._tx(write=True) as write:
            for _mem_id, agent, level, terms in write.execute(
                "SELECT memory_id, agent_id, level, group_concat(term, ' ') FROM postings_tail "
                "GROUP BY memory_id, agent_id, level"
            ).fetchall():
                write.execute(
                    "INSERT INTO term_deltas(agent_id, level, delta, terms) VALUES (?,?,?,?)",
                    (agent, level, 1, terms),
                )
            write.execute("DELETE FROM meta WHERE name = 'tail_counts'")
            write.execute(
                "UPDATE meta SET value = '1' WHERE name = 'schema_version'"
            )  # as such a store records
        assert conn.execute("SELECT count(*) FROM postings_tail").fetchone()[0] > 0
    with sm.open_store(path) as store:
        conn = store.backend._conn
        assert conn.execute("SELECT count(*) FROM postings_tail").fetchone()[0] == 0
        assert effective_df(conn) == recount(conn)
        s = store.session("a")
        assert [
            [(h.memory.key, h.score) for h in s.search(q, 10)] for q in ("w1 w20", "w3", "w0 w8")
        ] == before


def test_a_store_without_an_embedder_marks_no_vectors_until_it_records_one(tmp_path):
    path = str(tmp_path / "v.db")
    with sm.open_store(path, search_mode="lexical", embedder=None) as store:
        s = store.session("a")
        for i in range(5):
            s.save(f"k{i}", f"note {i} about herons")
        s.save_many([{"key": f"b{i}", "content": "tax forms"} for i in range(3)])
        s.delete("k4")
        assert store.backend._conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 0
    with sm.open_store(path, search_mode="hybrid", embedder=HashEmbedder()) as store:
        s = store.session("a")
        assert store.reindex() == 7  # the first embedder recorded marks every live version
        conn = store.backend._conn
        assert conn.execute("SELECT count(*) FROM vectors WHERE model IS NOT NULL").fetchone()[0] == 7
        s.save("k9", "a new note about herons")  # the store has an embedder now: marked pending
        assert (
            conn.execute("SELECT count(*) FROM vectors WHERE model IS NULL AND live = 1").fetchone()[0] == 1
        )
        assert "k9" in [h.memory.key for h in s.search("herons", 10, mode="semantic")]


LEXICAL_WRITER = """
import sys, stratamem as sm
with sm.open_store(sys.argv[1], search_mode="lexical", embedder=None) as store:
    s = store.session("p")
    for i in range(int(sys.argv[2])):
        s.save(f"p{i}", f"note {i} from another process")
"""


def test_saves_from_a_lexical_process_after_another_recorded_an_embedder_are_marked(tmp_path):
    """Whether to mark is read inside each save's write transaction, not remembered by the process."""
    path = str(tmp_path / "mixed.db")
    with sm.open_store(path, search_mode="hybrid", embedder=HashEmbedder()) as store:
        s = store.session("a")
        s.save("a0", "first note")
        s.search("note")  # records the embedder (and embeds a0)
        subprocess.run([sys.executable, "-c", LEXICAL_WRITER, path, "4"], check=True, timeout=120)
        conn = store.backend._conn
        assert (
            conn.execute("SELECT count(*) FROM vectors WHERE model IS NULL AND live = 1").fetchone()[0] == 4
        )
        assert store.reindex() == 4


_text = st.text(max_size=12)
_detail = st.dictionaries(
    _text,
    st.recursive(st.none() | st.booleans() | st.integers() | _text, lambda c: st.lists(c, max_size=3)),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(
    seq=st.integers(1, 10**12),
    session=st.none() | _text,
    agent=st.none() | _text,
    taint=st.sampled_from(list(Level)),
    op=_text,
    keys=st.lists(_text, max_size=3),
    levels=st.lists(st.sampled_from(list(Level)), max_size=3),
    lineage=st.lists(_text, max_size=3),
    outcome=_text,
    detail=_detail,
    prev=_text,
)
def test_the_audit_hash_is_the_canonical_encoders(
    seq, session, agent, taint, op, keys, levels, lineage, outcome, detail, prev
):
    """The field-by-field canonical JSON that seals every event is the general encoder's, byte for byte."""
    draft = AuditDraft(op, session, agent, taint, tuple(keys), tuple(levels), tuple(lineage), outcome, detail)
    when = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC).isoformat()
    try:
        expected = hashlib.sha256(audit._canonical_body(seq, when, draft, prev).encode("utf-8")).hexdigest()
    except UnicodeEncodeError:  # a lone surrogate: neither encodes
        with pytest.raises(UnicodeEncodeError):
            audit._hash(seq, when, draft, prev)
        return
    assert audit._hash(seq, when, draft, prev) == expected
