"""``stratamem.Client`` / ``AsyncClient`` against the real server: every operation, errors as our classes."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import json
import sys

import anyio
import pytest
from server_support import server, server_config, server_store, token  # noqa: F401

import stratamem as sm
from stratamem.client import Unauthenticated


def test_sessions_memories_search_and_paging(server):
    with sm.Client(server.url, token("alice")) as client:
        assert client.health()["status"] == "ok"
        session = client.create_session()
        sid = session["id"]
        assert session["taint"] == "PUBLIC" and session["agent_id"] == "alice"
        assert client.save(sid, "lang", "prefers Python", tags=["pref"]) == {
            "saved": True,
            "key": "lang",
            "classification": "PUBLIC",
        }
        odd = "a/b?c#d %2F ü"
        client.save(sid, odd, "odd key")
        assert client.get(sid, odd)["content"] == "odd key"
        assert client.get(sid, "missing") is None
        assert [h["key"] for h in client.search(sid, "python")["results"]] == ["lang"]
        for i in range(5):
            client.save(sid, f"n{i}", f"note {i}")
        keys, cursor = [], None
        while True:
            page = client.list_memories(sid, limit=2, cursor=cursor)
            keys += [m["key"] for m in page["memories"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert sorted(keys) == sorted(["lang", odd, *[f"n{i}" for i in range(5)]])
        assert client.list_memories(sid, tag="pref")["memories"][0]["key"] == "lang"
        raised = client.escalate(sid, "CONFIDENTIAL", "read the contract")
        assert raised["taint"] == "CONFIDENTIAL" and client.get_session(sid)["taint_history"]
        assert client.save(sid, "deal", "price is 1.2M")["classification"] == "CONFIDENTIAL"
        assert client.delete(sid, "deal") == {"deleted": True, "key": "deal"}
        fresh = client.reset(sid)
        assert fresh["id"] != sid and fresh["taint"] == "PUBLIC"
        assert client.get(fresh["id"], "deal") is None
        page = client.audit(limit=3)
        assert len(page["events"]) == 3 and page["more"] is True
        older = client.audit(limit=3, before=page["next_before"])
        assert max(e["seq"] for e in older["events"]) < min(e["seq"] for e in page["events"])
        assert client.audit_verify() == {"intact": True}
        assert any(t["function"]["name"] == "memory_save" for t in client.tools()["tools"])


def test_errors_are_our_classes_with_the_same_codes(server):
    with sm.Client(server.url, token("intern")) as client:
        sid = client.create_session()["id"]
        with pytest.raises(sm.PolicyBlocked) as blocked:
            client.escalate(sid, "RESTRICTED")
        assert blocked.value.code == "POLICY_BLOCKED"
        with pytest.raises(sm.ValidationError):
            client.save(sid, "", "empty key")
        with pytest.raises(sm.ValidationError):
            client.save(sid, "lone", "bad \ud800 surrogate")
        with pytest.raises(sm.NotFound):
            client.delete(sid, "never-saved")
    with sm.Client(server.url, token("bob")) as other, pytest.raises(sm.NotFound):
        other.get(sid, "anything")  # another principal's session does not exist for it
    with sm.Client(server.url, "wrong-token-0000000000") as stranger, pytest.raises(Unauthenticated):
        stranger.create_session()
    with sm.Client("http://127.0.0.1:9", "x", timeout=2) as nowhere, pytest.raises(sm.StorageError):
        nowhere.health()


def test_token_defaults_to_the_environment(server, monkeypatch):
    monkeypatch.setenv("STRATAMEM_TOKEN", token("alice"))
    with sm.Client(server.url) as client:
        assert client.create_session()["agent_id"] == "alice"


def test_async_client_runs_a_whole_turn(server):
    async def main() -> dict:
        async with sm.AsyncClient(server.url, token("alice")) as client:
            sid = (await client.create_session())["id"]
            await client.save(sid, "city", "Alice lives in Lisbon")
            turn = await client.begin_turn(sid, "weather where I live?", system_prompt="Be brief.")
            tid = turn["turn_id"]
            call = {"id": "call-1", "name": "weather", "arguments": json.dumps({"city": "Lisbon"})}
            await client.usage(sid, tid, "fake-1", 100, 10)
            assert (await client.tool_calls(sid, tid, [call]))["pending_tool_calls"] == ["call-1"]
            result = await client.tool_result(sid, tid, "call-1", "weather", "Sunny", duration_ms=1.5)
            assert result["pending_tool_calls"] == []
            messages = (await client.prompt(sid, tid, system_prompt="Be brief."))["messages"]
            assert messages[-1]["role"] == "tool"
            assert (await client.end_turn(sid, tid, "Sunny in Lisbon."))["state"] == "ended"
            with pytest.raises(sm.ValidationError):
                await client.end_turn(sid, tid, 5)  # type: ignore[arg-type]
            return await client.transcript(sid, limit=2)

    page = anyio.run(main)
    assert len(page["messages"]) == 2 and page["next"] == 2 and page["total"] >= 4


def test_missing_client_extra_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "httpx", None)
    monkeypatch.delitem(sys.modules, "stratamem.client", raising=False)
    with pytest.raises(sm.ValidationError, match=r"install stratamem\[client\]"):
        sm.Client  # noqa: B018


def test_serve_names_its_database_on_stderr(tmp_path):
    from server_support import free_port, start_serve

    db = tmp_path / "served.db"
    proc = start_serve(tmp_path, db, free_port())
    try:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert f"stratamem: database SQLite {db}" in err
