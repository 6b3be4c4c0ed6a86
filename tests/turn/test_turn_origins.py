"""Origin -> what recall includes: one table in the code (``turn/origins.py``), the same in its docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from stratamem.turn import origins
from stratamem.turn.origins import RECALL, STARTED_BY, Origin, origin_table, recall_policy

ROOT = Path(__file__).resolve().parents[2]
QUERY = "what do we know about the lisbon office"


def block(turn) -> str:
    return turn.messages()[-1].content


def test_a_turn_another_agent_started_recalls_no_conversation_memory(store) -> None:
    session = store.session("main")
    session.save("lisbon_chat", "We talked about the Lisbon office move", category="conversation")
    session.save("lisbon_fact", "The Lisbon office moves in May")
    content = block(session.turn(QUERY, origin="agent"))
    assert "lisbon_fact" in content and "lisbon_chat" not in content


@pytest.mark.parametrize("origin", list(Origin))
def test_every_origin_recalls_what_the_table_says(store, origin: Origin) -> None:
    session = store.session("main")
    session.save("lisbon_chat", "We talked about the Lisbon office move", category="conversation")
    session.save("lisbon_fact", "The Lisbon office moves in May")
    content = block(session.turn(QUERY, origin=origin.value))
    rule = RECALL[origin]
    assert ("lisbon_fact" in content) is rule.inject
    assert ("lisbon_chat" in content) is rule.include_conversation


def test_the_search_itself_runs_under_the_origins_conversation_scope(store, monkeypatch) -> None:
    session = store.session("main")
    scopes: list[str] = []
    real = type(session).search

    def spy(self, *args, **options):
        scopes.append(options.get("conversations"))
        return real(self, *args, **options)

    monkeypatch.setattr(type(session), "search", spy)
    for origin in ("interactive", "agent", "cron"):
        session.turn(QUERY, origin=origin)
    assert scopes == ["own", "none", "none"]


def test_without_a_session_scope_or_when_suppressed_no_conversation_is_recalled() -> None:
    assert recall_policy("interactive", ()).include_conversation is False
    assert recall_policy("interactive", ("s1",)).include_conversation is True
    assert recall_policy("interactive", ("s1",), suppress=True).inject is False


def test_the_table_covers_every_origin() -> None:
    assert set(RECALL) == set(STARTED_BY) == set(Origin)


def test_the_module_docstring_and_the_docs_show_the_codes_table() -> None:
    table = origin_table()
    assert table in (origins.__doc__ or "")
    assert table in (ROOT / "docs" / "turns.md").read_text(encoding="utf-8")
