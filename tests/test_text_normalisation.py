"""Search-box normalisation on every backend: accents fold, CJK text is searchable by character bigrams."""

from __future__ import annotations

import sqlite3

import pytest

import stratamem as sm
from stratamem.text import tokens


def keys(hits):
    return [h.memory.key for h in hits]


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_accents_fold_both_ways(make_store, mode):
    s = make_store(search_mode=mode, embedder="hash" if mode == "hybrid" else None).session()
    s.save("paris", "Meet at the café near the Élysée, bring the résumé")
    s.save("plain", "a cafe in Berlin")
    assert set(keys(s.search("cafe"))) == {"paris", "plain"}
    assert set(keys(s.search("CAFÉ"))) == {"paris", "plain"}
    assert keys(s.search("elysee resume"))[0] == "paris"


def test_cjk_is_searchable_by_bigrams(make_store):
    s = make_store().session()
    s.save("tokyo", "東京で寿司を食べた")
    s.save("beijing", "我们在北京吃了烤鸭")
    s.save("seoul", "서울에서 비빔밥을 먹었다")
    assert keys(s.search("寿司")) == ["tokyo"]
    assert keys(s.search("北京烤鸭")) == ["beijing"]
    assert keys(s.search("비빔밥")) == ["seoul"]
    assert keys(s.search("京都")) == []  # shares one character with 東京, no bigram


def test_tokens():
    assert tokens("Crème Brûlée, NAÏVE") == ["creme", "brulee", "naive"]
    assert tokens("iPhone発売日") == ["iphone", "発売", "売日"]
    assert tokens("猫") == ["猫"]
    assert tokens("🎉 emoji 🎉") == ["emoji"]


def test_an_existing_store_is_reindexed_for_the_new_analyzer(tmp_path):
    path = str(tmp_path / "old.db")
    with sm.open_store(path, search_mode="lexical") as store:
        store.session().save("k", "un café crème")
    conn = sqlite3.connect(path)  # pretend the terms were made by the analyzer before folding
    conn.execute("DELETE FROM meta WHERE name = 'analyzer'")
    conn.execute("UPDATE postings SET term = 'café' WHERE term = 'cafe'")
    conn.execute("UPDATE postings_tail SET term = 'café' WHERE term = 'cafe'")  # a single save's postings
    conn.commit()
    conn.close()
    with sm.open_store(path, search_mode="lexical") as store:
        assert keys(store.session().search("cafe")) == ["k"]
