"""Generated call sequences answer the same whether the server runs them itself or in worker processes.

Two stores start empty and receive the same sequence: one through ``run_call`` on a server without
workers, one on a server with two. Sessions of several principals (their own and others'), taint
raised by the runtime between calls, saves, batches, reads, searches, lists and deletes: every answer
must be the same text, once the stores' own session ids and update times are set aside. A worker that
cached a session, its taint or a principal's rights, or ran another gate, would answer differently.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_support import write_config

import stratamem as sm
from stratamem.server.config import load_config
from stratamem.server.principals import Principals
from stratamem.server.state import ServerState
from stratamem.server.tool_workers import ToolCall, ToolWorkers, WorkerSettings, run_call
from stratamem.session import Session

WHO = ("alice", "bob", "intern", "reader")
KEYS = ("plan", "diet", "trip")
WORDS = ("otter", "river", "tea", "plan", "secret", "garden")


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("twin")
    config = load_config(write_config(tmp))
    principals = Principals(config.principals)
    here = ServerState(sm.Store(str(tmp / "here.db")), principals, policy=config.policy.build())
    there_db = str(tmp / "there.db")
    workers = ToolWorkers(
        WorkerSettings(there_db, {}, tuple(config.principals), config.policy, config.profile), 2
    )
    there = ServerState(sm.Store(there_db), principals, policy=config.policy.build(), workers=workers)
    yield here, there, {p.name: p for p in config.principals}
    workers.close()
    here.store.close()
    there.store.close()


content = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
tool_calls = st.one_of(
    st.tuples(
        st.just("memory_save"), st.fixed_dictionaries({"key": st.sampled_from(KEYS), "content": content})
    ),
    st.tuples(st.just("memory_get"), st.fixed_dictionaries({"key": st.sampled_from(KEYS)})),
    st.tuples(st.just("memory_delete"), st.fixed_dictionaries({"key": st.sampled_from(KEYS)})),
    st.tuples(
        st.just("memory_search"), st.fixed_dictionaries({"query": content, "max_results": st.integers(1, 5)})
    ),
    st.tuples(st.just("memory_list"), st.fixed_dictionaries({"limit": st.integers(1, 5)})),
    st.tuples(
        st.just("memory_save_many"),
        st.fixed_dictionaries(
            {
                "items": st.lists(
                    st.fixed_dictionaries({"key": st.sampled_from(KEYS), "content": content}), max_size=3
                )
            }
        ),
    ),
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("call"), st.integers(0, 2), st.sampled_from(WHO), tool_calls),
        st.tuples(st.just("escalate"), st.integers(0, 2), st.sampled_from(["INTERNAL", "CONFIDENTIAL"])),
    ),
    min_size=1,
    max_size=12,
)


def _same_shape(text: str | None, session_ids: dict[str, str]) -> Any:
    """The answer with the store's own session ids and update and occurred times set aside (both the wall clock)."""
    assert text is not None
    for own, common in session_ids.items():
        text = text.replace(own, common)

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: strip(v) for k, v in value.items() if k not in ("updated_at", "occurred_at", "next_cursor")
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(text))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(owners=st.lists(st.sampled_from(WHO), min_size=3, max_size=3), sequence=steps)
def test_workers_answer_every_generated_sequence_as_the_server_does(twin, owners, sequence):
    here, there, who = twin
    sessions = []
    ids: dict[str, str] = {}
    for n, owner in enumerate(owners):
        pair = (here.open_session(who[owner]).id, there.open_session(who[owner]).id)
        ids[pair[0]], ids[pair[1]] = f"session-{n}", f"session-{n}"
        sessions.append(pair)
    for step in sequence:
        if step[0] == "escalate":  # the runtime's side; above the session's clearance it is refused
            _, n, level = step
            outcomes = []
            for state, session_id in zip((here, there), sessions[n], strict=True):
                try:
                    outcomes.append(
                        Session(state.store, session_id).escalate(level, "the conversation moved on")
                    )
                except sm.ClearanceError as exc:
                    outcomes.append(exc.code)
            assert outcomes[0] == outcomes[1]
            continue
        _, n, caller, (name, arguments) = step
        answers = [
            _same_shape(run_call(state, ToolCall(who[caller], session_id, name, arguments)), ids)
            for state, session_id in zip((here, there), sessions[n], strict=True)
        ]
        assert answers[0] == answers[1], (caller, name, arguments)
    assert here.store.verify_audit() is None and there.store.verify_audit() is None
