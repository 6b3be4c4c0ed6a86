"""Conversation scope (``stratamem.scope``): one rule for every read an agent makes of conversation memories.

A ``conversation`` memory belongs to the session that saved it. Another
session's reads — get, list, search in every mode, the memory tools, recall —
behave exactly as if it did not exist: it is not returned, shadows nothing and
moves no score. Reads from autonomous origins see no conversation memory at all.
The operator's console is not an agent and sees them all.
"""

from __future__ import annotations

import json

import pytest
from conftest import BACKENDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_noninterference import (
    HIDDEN_KEYS,
    KEYS,
    OWN,
    PEER,
    World,
    assert_noninterference,
    content,
    scenario,
    tags,
)

import stratamem as sm
from stratamem import Level
from stratamem.operator import OperatorView
from stratamem.scope import scoped
from stratamem.tools import execute
from stratamem.turn.autosave import autosave_key

MESSAGE = "Please remember that the Lisbon office door code is 4711"


class ChatWorld(World):
    """The noninterference world plus conversation memories: the observer's own and other chats'."""

    origin = "interactive"

    def apply(self, op, index: int = 0) -> None:
        kind = op[0]
        if kind == "own_chat":  # the observer's own conversation memory, at its taint
            _, key, text, tag_list = op
            self.at_step(index)
            self.live.add((OWN, self.taint, key))
            self.observer.save(key, text, tags=tag_list, category="conversation")
        elif kind == "other_chat":  # another chat of a visible agent, at a visible level
            _, agent, lv, key, text, tag_list = op
            chat = self.store.session(agent)
            chat.escalate(lv, "chat")
            self.at_step(index)
            chat.save(key, text, tags=tag_list, category="conversation")
        else:
            super().apply(op, index)

    def observe(self, queries) -> list:
        real = self.observer
        self.observer = scoped(real, self.origin)
        try:
            return super().observe(queries)
        finally:
            self.observer = real


class CronWorld(ChatWorld):
    origin = "cron"


@st.composite
def chat_scenario(draw, own_chats_visible: bool = True):
    """A noninterference scenario with conversation memories inserted anywhere in it.

    Other chats' memories (and, for autonomous reads, the observer's own) are hidden records. They
    never land on a slot (agent, level, key) the visible history writes: a save there updates the
    version in place, which is the lattice's write rule, not a read.
    """
    taint, steps, queries = draw(scenario())
    seen = [lv for lv in Level if lv <= taint]
    own = st.tuples(st.just("own_chat"), st.sampled_from(KEYS), content, tags)
    other = st.tuples(
        st.just("other_chat"),
        st.sampled_from([OWN, PEER]),
        st.sampled_from(seen),
        st.sampled_from(KEYS + HIDDEN_KEYS),
        content,
        tags,
    )
    extra = draw(
        st.lists(
            st.tuples(
                st.integers(0, len(steps)),
                st.one_of(
                    st.tuples(st.just("visible" if own_chats_visible else "hidden"), own),
                    st.tuples(st.just("hidden"), other),
                ),
            ),
            max_size=10,
        )
    )
    merged = list(steps)
    for at, step in sorted(extra, key=lambda e: -e[0]):  # from the end, so earlier positions hold
        merged.insert(at, step)

    def slot(op):
        return (OWN, taint, op[1]) if op[0] == "own_chat" else (op[1], op[2], op[3])

    written = {slot(op) for where, op in merged if where == "visible" and op[0] in ("save", "own_chat")}
    kept = [
        (where, op)
        for where, op in merged
        if not (where == "hidden" and op[0] in ("own_chat", "other_chat") and slot(op) in written)
    ]
    return taint, kept, queries


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chat_scenario())
def test_other_chats_conversation_memories_change_nothing_a_session_reads(backend, tmp_path, data):
    assert_noninterference(backend, tmp_path, data, world=ChatWorld)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chat_scenario(own_chats_visible=False))
def test_autonomous_reads_are_as_if_no_conversation_memory_existed(backend, tmp_path, data):
    assert_noninterference(backend, tmp_path, data, world=CronWorld)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.booleans().flatmap(lambda cron: st.tuples(st.just(cron), chat_scenario(not cron))), st.booleans())
def test_other_chats_and_autonomous_reads_in_dense_modes(backend, mode, tmp_path, drawn, reindex):
    """The same properties in semantic and hybrid search (other chats' memories embedded or still pending)."""
    cron, data = drawn
    prepare = (lambda store: store.reindex()) if reindex else None
    world = CronWorld if cron else ChatWorld
    assert_noninterference(
        backend, tmp_path, data, prepare=prepare, world=world, search_mode=mode, embedder="hash"
    )


def test_shadowing_ignores_a_higher_version_from_another_chat(store) -> None:
    """A higher version the session cannot read shadows nothing: get, list and search show the lower one."""
    store.session("main").save("plan", "lisbon plan in public")
    other = store.session("main")
    other.escalate(Level.INTERNAL, "chat")
    other.save("plan", "lisbon plan said in another chat", category="conversation")
    me = store.session("main")
    me.escalate(Level.INTERNAL, "reading")
    for seen in (me.get("plan"), *me.list(), *(h.memory for h in me.search("lisbon plan"))):
        assert seen is not None and seen.content == "lisbon plan in public"
    assert other.get("plan").content == "lisbon plan said in another chat"


def test_another_chats_tools_find_nothing_of_an_autosaved_message(store) -> None:
    """The reported case: chat A autosaves a message; chat B's memory tools never return it."""
    chat_a = store.session("main")
    chat_a.turn(MESSAGE).end("Noted.")
    key = autosave_key(MESSAGE)
    assert chat_a.get(key).category == "conversation"
    chat_b = store.session("main")
    calls = [
        ("memory_search", {"query": "lisbon door code"}),
        ("memory_list", {}),
        ("memory_get", {"key": key}),
        ("memory_recall", {"query": "lisbon door code"}),
        ("memory_recall", {"query": "*"}),
        ("memory_export", {}),
        ("memory_export", {"session_id": chat_a.id}),
    ]
    for name, arguments in calls:
        assert "4711" not in execute(chat_b, name, arguments), name
        assert "4711" in execute(chat_a, name, arguments), name
    assert chat_b.get(key) is None and chat_b.search("lisbon door code") == []
    # recall into chat B's own turn does not carry it either
    assert "4711" not in chat_b.turn("what is the lisbon door code?").messages()[-1].content


def test_the_console_is_the_operators_view_and_sees_every_chat(store) -> None:
    store.session("main").save("chat-note", "the lisbon door code is 4711", category="conversation")
    view = OperatorView.open(store, "CONFIDENTIAL", actor="ops")
    assert [h.memory.key for h in view.search("main", "lisbon door code")] == ["chat-note"]


def test_an_unknown_conversation_scope_is_refused(store) -> None:
    with pytest.raises(sm.ValidationError):
        store.session("main").search("x", conversations="everyone")  # type: ignore[arg-type]


def test_rest_reads_of_another_chat_find_nothing(tmp_path) -> None:
    """Over HTTP: two chats of one principal; the second one's REST reads never return the first's message."""
    pytest.importorskip("uvicorn")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "server"))
    from server_support import live_server, write_config

    store = sm.open_store(str(tmp_path / "memory.db"))
    try:
        with live_server(store, write_config(tmp_path)) as server, server.client("alice") as rest:
            chat_a = rest.post("/v1/sessions").json()["id"]
            begun = rest.post(f"/v1/sessions/{chat_a}/turns", json={"user_message": MESSAGE})
            assert begun.status_code == 201, begun.text
            chat_b = rest.post("/v1/sessions").json()["id"]
            key = autosave_key(MESSAGE)
            reads = [
                ("GET", "/search", {"query": "lisbon door code"}),
                ("GET", "/memories", None),
                ("GET", f"/memories/{key}", None),
            ]
            for method, path, params in reads:
                theirs = rest.request(method, f"/v1/sessions/{chat_b}{path}", params=params)
                mine = rest.request(method, f"/v1/sessions/{chat_a}{path}", params=params)
                assert "4711" not in theirs.text and "4711" in mine.text, (path, theirs.text)
            assert json.loads(theirs.text)["found"] is False
    finally:
        store.close()
