"""Scrubbing only what an event can show gives exactly the text of scrubbing everything, then cutting."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from stratamem.turn.scrub import DEFAULT_MAX_CHARS, bound_text, scrub_value, scrub_within

SECRETS = [
    "sk-abcdefghijklmnopqrstuvwxyz0123",
    "ghp_" + "a1" * 18,
    "AKIAIOSFODNN7EXAMPLE",
    "password=hunter22",
]
texts = st.one_of(st.text(max_size=60), st.sampled_from(SECRETS), st.text(max_size=3000))
leaves = st.one_of(texts, st.integers(), st.booleans(), st.none())
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=8),
        st.dictionaries(st.one_of(st.text(max_size=12), st.just("token")), inner, max_size=6),
    ),
    max_leaves=60,
)


def shown(value: object, max_chars: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return bound_text(text, max_chars)


@settings(max_examples=150, deadline=None)
@given(values, st.sampled_from([0, 16, 200, DEFAULT_MAX_CHARS]))
def test_scrub_within_shows_what_scrubbing_everything_shows(value, max_chars):
    assert shown(scrub_within(value, max_chars), max_chars) == shown(scrub_value(value), max_chars)


def test_a_long_argument_list_is_scrubbed_only_as_far_as_it_shows():
    value = {"entities": [{"name": f"n{i}", "observations": ["word " * 20]} for i in range(10_000)]}
    kept = scrub_within(value, DEFAULT_MAX_CHARS)
    assert 0 < len(kept["entities"]) < 20
    assert shown(kept, DEFAULT_MAX_CHARS) == shown(scrub_value(value), DEFAULT_MAX_CHARS)
