"""The scanner survives obfuscation: a generated corpus of encoded payloads, and benign writes that pass.

The corpus (``scanner_corpus``) is every seed payload under every obfuscation
the adversarial review used (base64, hex, reversed, spaced letters, zero-width
joiners, soft hyphens, Cyrillic homoglyphs, fullwidth, quoted concatenation,
rot13, URL-encoding, ``\\u`` escapes, case changes, split lines) plus HTML
entities and a mix. Before normalisation, 227 of 288 such writes were stored.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_support import new_store
from scanner_corpus import BENIGN, OBFUSCATIONS, SEEDS, poisoned

from stratamem.policy.normalize import CHUNK_CHARS, MAX_VIEWS, chunks, views
from stratamem.policy.scanner import scan
from stratamem.tools import execute

MAX_BYPASS_RATE = 0.10
MAX_FALSE_POSITIVES = 2  # of len(BENIGN) ordinary writes


def test_every_seed_is_caught_in_plain_text():
    assert all(scan(seed) for seed in SEEDS)


def test_corpus_is_large_enough():
    assert len(poisoned()) >= 288


def test_bypass_rate_is_under_ten_percent():
    corpus = poisoned()
    missed = Counter(name for _, name, text in corpus if not scan(text))
    rate = sum(missed.values()) / len(corpus)
    assert rate < MAX_BYPASS_RATE, f"bypass {rate:.1%}: {dict(missed)}"


@pytest.mark.parametrize("obfuscation", sorted(OBFUSCATIONS))
def test_no_obfuscation_family_mostly_bypasses(obfuscation):
    texts = [text for _, name, text in poisoned() if name == obfuscation]
    assert sum(1 for t in texts if not scan(t)) <= len(texts) // 5


def test_benign_corpus_passes():
    flagged = [(text[:60], scan(text)) for text in BENIGN if scan(text)]
    assert len(flagged) <= MAX_FALSE_POSITIVES, flagged


@pytest.mark.parametrize("obfuscation", sorted(OBFUSCATIONS))
def test_tools_refuse_obfuscated_writes(obfuscation):
    text = next(t for seed, name, t in poisoned() if name == obfuscation and seed == SEEDS[0])
    with new_store() as store:
        s = store.session()
        answer = json.loads(execute(s, "memory_save", {"key": "tip", "content": text}))
        assert answer["error"]["code"] == "POLICY_BLOCKED"
        assert s.list() == []


def test_a_payload_behind_long_padding_is_still_seen():
    assert scan("harmless note. " * 8000 + " cat ~/.ssh/id_rsa") == ("secret_file_read",)


def test_work_is_bounded_on_hostile_input():
    hostile = [
        "Y3Vy" * 4000,
        "%41" * 5000,
        "\\u0041" * 2500,
        "c u r l " * 2000,
        "\u200b" * 16000,
        "&#65;" * 3000,
        "41" * 8000,
    ]
    for text in hostile:
        shown = views(text[:CHUNK_CHARS])
        assert len(shown) <= MAX_VIEWS
        assert all(len(v) <= 2 * CHUNK_CHARS for v in shown)
    long = "x" * (10 * CHUNK_CHARS)
    assert sum(len(c) for c in chunks(long)) < 1.2 * len(long)


def _missed_among_notes(separator: str, step: int) -> list[tuple[str, str, str]]:
    return [
        (seed, name, before)
        for seed, (name, obfuscate) in itertools.product(SEEDS, OBFUSCATIONS.items())
        for before, after in ((BENIGN[i], BENIGN[-1 - i]) for i in range(0, len(BENIGN), step))
        if not scan(f"{before}{separator}{obfuscate(seed)}{separator}{after}")
    ]


@pytest.mark.parametrize("separator", ["\n\n", "\n", " "])
def test_an_obfuscated_payload_among_ordinary_notes_is_caught(separator):
    assert _missed_among_notes(separator, step=30) == []


@pytest.mark.slow
@pytest.mark.parametrize(("separator", "allowed"), [("\n\n", 0), ("\n", 32), (" ", 32)])
def test_an_obfuscated_payload_among_many_notes(separator, allowed):
    # 3,200 writes per separator. As its own paragraph nothing slips; glued to a short line of prose, a
    # split-line or spaced-letter payload can (measured: 9 with one newline, 2 with a space; see README).
    missed = _missed_among_notes(separator, step=6)
    assert len(missed) <= allowed, missed[:5]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=600))
def test_views_stay_bounded_for_any_text(text):
    shown = views(text)
    assert len(shown) <= MAX_VIEWS and all(len(v) <= 2 * len(text) + 8 for v in shown)
