"""BM25's length normalisation is light (ranking.B): a longer memory that says more is not buried.

Memories are short; the longer one usually carries more of the facts a
question asks about. With the classic b = 0.75 the one-line mention below
outranks the memory that is about the dog; with b = 0.3 it does not.
"""

from __future__ import annotations

from stratamem.search import ranking

SHORT = "Melanie: nice, a golden retriever"
LONG = (
    "Caroline: I adopted a golden retriever puppy last month, she is such a sweet golden retriever "
    "and loves long walks by the river with me every morning before work"
)


def test_the_memory_about_the_subject_outranks_a_passing_mention(make_store):
    s = make_store(search_mode="lexical").session()
    s.save("short", SHORT)
    s.save("long", LONG)
    assert [h.memory.key for h in s.search("golden retriever", mode="lexical")] == ["long", "short"]


def test_length_normalisation_is_light_and_the_score_stays_bm25():
    assert 0.0 < ranking.B <= 0.4
    # a term's contribution still grows with tf and shrinks with length, as BM25's must
    assert ranking.term_score(1.0, 2, 10, 10.0) > ranking.term_score(1.0, 1, 10, 10.0)
    assert ranking.term_score(1.0, 1, 5, 10.0) > ranking.term_score(1.0, 1, 20, 10.0)
