"""Noninterference (CONTRACT §5) for semantic and hybrid search, on every backend.

The same replay as ``test_noninterference``: two stores with the same visible
history, one also holding records the observer must not see. Searches run in
semantic or hybrid mode with the deterministic hash embedder; scores and order
must be bit-identical. With ``reindex`` the invisible records have vectors too
(the dense side must skip them); without it they stay pending (the catch-up
must embed only what the observer sees).
"""

from __future__ import annotations

import pytest
from conftest import BACKENDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_noninterference import assert_noninterference, scenario


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario(), st.booleans())
def test_invisible_records_change_nothing_in_dense_modes(backend, mode, tmp_path, data, reindex):
    prepare = (lambda store: store.reindex()) if reindex else None
    assert_noninterference(backend, tmp_path, data, prepare=prepare, search_mode=mode, embedder="hash")


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_embedded_invisible_records_are_never_dense_candidates(make_store, mode, clock):
    """Every kind of invisible record, already embedded, against an observer at INTERNAL."""
    store = make_store(search_mode=mode, embedder="hash", clock=clock)
    high = store.session("a")
    high.escalate("CONFIDENTIAL", "t")
    high.save("above", "apple river")
    store.session("c").save("outsider", "apple river")
    gone = store.session("a")
    gone.escalate("INTERNAL", "t")
    gone.save("deleted", "apple river")
    gone.save("expiring", "apple river", ttl=0.5)
    low = store.session("a")
    low.save("shadowed", "apple river")  # PUBLIC version, shadowed by the INTERNAL one below
    gone.save("shadowed", "banana tea")
    store.reindex()
    gone.delete("deleted")
    clock.advance(1)
    observer = store.session("a", peers=("b",))
    observer.escalate("INTERNAL", "observe")
    found = [(h.memory.key, h.memory.content) for h in observer.search("apple river", max_results=100)]
    assert found == [("shadowed", "banana tea")] or found == []
