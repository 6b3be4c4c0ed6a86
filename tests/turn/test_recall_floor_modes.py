"""The recall floor holds in every search mode (issue 27, item 3).

In a hybrid store an unrelated question used to inject whatever the model found similar enough: the
term-coverage floor applied to lexical stores only.
"""

from __future__ import annotations

import pytest

from stratamem.embed.hashing import HashEmbedder
from stratamem.turn import ContextConfig, TurnSettings

UNRELATED = "tell me about the office christmas party budget"  # five terms, one of them "office"


def block(turn) -> str:
    return turn.messages()[-1].content


@pytest.mark.parametrize("mode", ["lexical", "hybrid", "semantic"])
def test_an_unrelated_question_injects_nothing_in_any_mode(make_store, mode) -> None:
    store = make_store(search_mode=mode, embedder=HashEmbedder())
    session = store.session("main")
    session.save("lisbon-move", "The Lisbon office relocation starts in May")
    assert [h.memory.key for h in session.search(UNRELATED)] == ["lisbon-move"]  # the store finds it
    assert "Lisbon" not in block(store.session("main").turn(UNRELATED))
    related = block(store.session("main").turn("when does the Lisbon office relocation start?"))
    assert "The Lisbon office relocation starts in May" in related


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_floor_of_zero_keeps_what_the_store_found(make_store, mode) -> None:
    store = make_store(search_mode=mode, embedder=HashEmbedder())
    session = store.session("main")
    session.save("lisbon-move", "The Lisbon office relocation starts in May")
    settings = TurnSettings(context=ContextConfig(min_coverage=0.0))
    assert "Lisbon" in block(store.session("main").turn(UNRELATED, settings=settings))
