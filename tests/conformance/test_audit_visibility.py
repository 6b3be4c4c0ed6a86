"""Who reads which audit events: a principal sees only what it could have observed itself.

Its own sessions' events at levels up to its clearance; never another
principal's (even of the same agent), never operator actions, which cover
every level and are recorded at RESTRICTED; escalations recorded at the level
asked for, so readers below it never see their reasons. Both backends.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import BACKENDS, fresh_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem.errors import StratamemError
from stratamem.levels import Level
from stratamem.policy import lineage


def test_peer_reads_of_another_principal_are_not_listed(store):
    store.session("shared").save("shared-plan", "the shared plan")
    peer_reader = store.session("alice", peers=("shared",), owner="alice-with-peer")
    assert peer_reader.get("shared-plan") is not None
    mine = store.session("alice", owner="alice-no-peer")
    mine.list()
    seen = store.audit_events(Level.RESTRICTED, owner="alice-no-peer")
    assert seen and {e.session_id for e in seen} == {mine.id}
    assert "shared-plan" not in {k for e in seen for k in e.keys}
    assert "shared-plan" in {k for e in store.audit_events() for k in e.keys}  # the operator sees it


def test_operator_actions_are_operator_only(store):
    s = store.session("alice", owner="alice")
    s.escalate(Level.CONFIDENTIAL, "x")
    s.save("k", "v")
    list(store.export())
    store.purge(before=datetime.now(UTC) - timedelta(days=1))
    ops = [e for e in store.audit_events() if e.operation in ("export", "purge")]
    assert [e.operation for e in ops] == ["export", "purge"]
    assert all(e.taint is Level.RESTRICTED and e.session_id is None for e in ops)
    for clearance in (Level.PUBLIC, Level.INTERNAL, Level.CONFIDENTIAL):  # counts cover every level
        assert not [e for e in store.audit_events(clearance) if e.session_id is None]
    assert not [e for e in store.audit_events(Level.RESTRICTED, owner="alice") if e.session_id is None]


def test_escalations_are_recorded_at_the_level_asked_for(store):
    s = store.session("alice", clearance=Level.CONFIDENTIAL)
    s.escalate(Level.CONFIDENTIAL, "opened the payroll file", source="tool:read_file")
    with pytest.raises(Exception):
        s.escalate(Level.RESTRICTED, "tried the board minutes")
    public = store.audit_events(Level.PUBLIC)
    assert not [e for e in public if e.operation == "escalate"]
    assert "payroll" not in repr(public) and "board minutes" not in repr(public)
    escalations = [e for e in store.audit_events() if e.operation == "escalate"]
    assert [(e.taint, e.outcome) for e in escalations] == [
        (Level.CONFIDENTIAL, "ok"),
        (Level.RESTRICTED, "refused"),
    ]


def test_pages_are_bounded_and_continue(store):
    s = store.session("alice", owner="alice")
    for i in range(7):
        s.save(f"k{i}", "v")
    mine = store.audit_events(owner="alice")
    newest, more = store.audit_page(3, owner="alice")
    assert more and newest == mine[-3:]
    older, more = store.audit_page(3, owner="alice", before=newest[0].seq)
    assert more and older == mine[-6:-3]
    first, more = store.audit_page(5, owner="alice", after=0)
    assert more and first == mine[:5]
    rest, more = store.audit_page(5, owner="alice", after=first[-1].seq)
    assert not more and rest == mine[5:]


def test_lineage_queries_apply_the_same_rule(store):
    author = store.session("alice", owner="alice")
    saved = author.save("k", "v")
    other = store.session("alice", owner="alice-2")
    other.get("k")
    assert {a.session_id for a in lineage.history(store, saved.lineage_id, owner="alice")} == {author.id}
    assert {a.session_id for a in lineage.readers(store, saved.lineage_id)} == {other.id}
    assert lineage.readers(store, saved.lineage_id, owner="alice") == []


# Noninterference for the audit reader: what a principal sees of the log does not depend on what other
# principals (of the same agent, with peers or higher clearance) or the operator did.
ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["save", "get", "list", "escalate", "peer-get", "export"]),
        st.sampled_from(["k1", "k2"]),
        st.sampled_from(list(Level)),
    ),
    max_size=8,
)


def _view(store, owner: str) -> list[tuple]:
    return [
        (e.operation, e.keys, e.levels, e.outcome, e.taint, e.detail.get("count"))
        for e in store.audit_events(Level.INTERNAL, owner=owner)
    ]


def _act(store, session, peer_session, action: tuple) -> None:
    op, key, level = action
    if op == "save":
        # another principal's saves go to an agent the reader cannot read (its own would be visible data)
        (peer_session or session).save(key, "content")
    elif op == "get":
        session.get(key)
    elif op == "list":
        session.list()
    elif op == "escalate":
        try:
            session.escalate(level, f"reason {level.name}")
        except StratamemError:
            pass
    elif op == "peer-get" and peer_session is not None:
        peer_session.get(key)
    elif op == "export":
        list(store.export())


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mine=ACTIONS, others=ACTIONS)
def test_a_principals_audit_view_ignores_everyone_else(backend, tmp_path, mine, others):
    views = []
    for with_others in (False, True):
        store = fresh_store(backend, tmp_path)
        try:
            store.session("shared").save("k1", "shared note")
            me = store.session("alice", clearance=Level.INTERNAL, owner="me")
            them = store.session("alice", peers=("shared",), owner="them")
            peer = store.session("shared", owner="them")
            for i in range(max(len(mine), len(others))):
                if with_others and i < len(others):
                    _act(store, them, peer, others[i])
                if i < len(mine):
                    _act(
                        store,
                        me,
                        None,
                        mine[i] if mine[i][0] not in ("export", "peer-get") else ("list", "", 0),
                    )
            views.append(_view(store, "me"))
        finally:
            store.close()
    assert views[0] == views[1]
