"""Query expansion (search/expansion.py): RM3's weights, and a second search that finds what the first missed."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from stratamem.search.expansion import EXPANSION_TERMS, ORIGINAL_SHARE, expanded_weights


def test_question_terms_keep_weight_one_and_the_expansion_shares_the_rest() -> None:
    feedback = [
        (Counter({"kid": 1, "dinosaur": 2, "museum": 1}), 2.0),
        (Counter({"dinosaur": 1, "bone": 1}), 1.0),
    ]
    weights = expanded_weights(["kid", "like"], feedback)
    assert weights["kid"] == weights["like"] == 1.0
    expansion = {t: w for t, w in weights.items() if t not in ("kid", "like")}
    assert set(expansion) == {"dinosaur", "museum", "bone"}
    assert max(expansion, key=expansion.__getitem__) == "dinosaur"
    assert abs(sum(expansion.values()) - 2 * (1 - ORIGINAL_SHARE) / ORIGINAL_SHARE) < 1e-9


def test_no_feedback_or_no_new_word_leaves_the_question_alone() -> None:
    assert expanded_weights(["tea"], []) == {"tea": 1.0}
    assert expanded_weights(["tea"], [(Counter({"tea": 3}), 1.0)]) == {"tea": 1.0}
    assert expanded_weights(["tea"], [(Counter({"cup": 3}), 0.0)]) == {"tea": 1.0}


@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from("abcdefghijklmnop"), st.integers(1, 5), max_size=8).map(Counter),
            st.floats(0.0, 10.0),
        ),
        max_size=8,
    )
)
def test_expansion_is_bounded_and_depends_on_the_hits_alone(feedback) -> None:
    weights = expanded_weights(["q"], feedback)
    assert weights["q"] == 1.0
    assert len(weights) <= 1 + EXPANSION_TERMS
    assert all(w > 0 for w in weights.values())
    assert weights == expanded_weights(["q"], list(feedback))  # deterministic: ties broken by term


def test_a_second_search_finds_the_memory_sharing_no_word_with_the_question(store):
    s = store.session("main")
    s.save("a", "Melanie's kids love dinosaurs and the natural history museum")
    s.save("b", "the dinosaurs exhibit at the museum had huge bones")
    s.save("c", "Caroline went hiking in the mountains")
    plain = [h.memory.key for h in s.search("what do Melanie's kids love?", mode="lexical")]
    expanded = [h.memory.key for h in s.search("what do Melanie's kids love?", mode="lexical", expand=True)]
    assert "b" not in plain and expanded[:2] == ["a", "b"]
