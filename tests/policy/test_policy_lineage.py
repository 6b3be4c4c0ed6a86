"""Lineage: who read a memory, when, at what taint — from the audit log."""

from __future__ import annotations

from policy_support import new_store

from stratamem import Level
from stratamem.policy import Policy, history, readers, writers
from stratamem.tools import execute


def test_readers_writers_and_history():
    with new_store() as store:
        author = store.session(agent_id="main", session_id="author")
        memory = author.save("plan", "launch friday")
        execute(author, "memory_save", {"key": "plan", "content": "launch friday at noon"})

        reader = store.session(agent_id="main", session_id="reader")
        reader.get("plan")
        execute(reader, "memory_search", {"query": "launch"})
        high = store.session(agent_id="main", session_id="high")
        high.escalate(Level.CONFIDENTIAL, "x")
        high.list()
        peer = store.session(agent_id="other", session_id="peer", peers=("main",))
        Policy().prepare_context(peer, [peer.get("plan")])
        store.session(agent_id="main", session_id="never").get("unrelated")

        found = readers(store, memory.lineage_id)
        assert [(r.session_id, r.operation, r.taint) for r in found] == [
            ("reader", "get", Level.PUBLIC),
            ("reader", "search", Level.PUBLIC),
            ("high", "list", Level.CONFIDENTIAL),
            ("peer", "get", Level.PUBLIC),
            ("peer", "policy.decision", Level.PUBLIC),
        ]
        assert found[0].agent_id == "main" and found[3].agent_id == "other"
        assert found[0].time < found[1].time
        assert found[0].to_dict()["taint"] == "PUBLIC"

        assert [w.operation for w in writers(store, memory.lineage_id)] == ["save", "save"]
        assert len(history(store, memory.lineage_id)) == 7

        # A reader whose clearance is below an event's taint does not see that event.
        assert "high" not in {r.session_id for r in readers(store, memory.lineage_id, clearance="INTERNAL")}
        assert readers(store, "no-such-lineage") == []


def test_limit_keeps_the_newest_events_before_filtering():
    with new_store() as store:
        author = store.session(agent_id="main", session_id="author")
        memory = author.save("plan", "launch friday")
        for _ in range(3):
            author.get("plan")
        author.save("plan", "launch monday")

        everything = history(store, memory.lineage_id)
        assert [a.operation for a in everything] == ["save", "get", "get", "get", "save"]
        assert history(store, memory.lineage_id, Level.RESTRICTED, limit=2) == everything[-2:]
        assert [a.seq for a in readers(store, memory.lineage_id, limit=3)] == [a.seq for a in everything[2:4]]
        assert writers(store, memory.lineage_id, owner=None, limit=1) == everything[-1:]
