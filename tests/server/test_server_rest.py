"""The REST API: the tools' exact shapes, ownership, status codes, audit, OpenAPI."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import json
from urllib.parse import quote

import httpx2
import jsonschema
import pytest
from server_support import auth, server, server_config, server_store  # noqa: F401

import stratamem as sm
from stratamem.errors import StorageError
from stratamem.server.openapi import document
from stratamem.session import Session
from stratamem.tools import execute


def _session(client) -> str:
    answer = client.post("/v1/sessions")
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def _tool(store, session_id: str, name: str, **arguments) -> str:
    text = execute(Session(store, session_id), name, arguments)
    assert text is not None
    return text


def _validate(instance: dict, name: str) -> None:
    doc = document()
    resolver_doc = {"components": doc["components"], **doc["components"]["schemas"][name]}
    jsonschema.validate(instance, resolver_doc)


def test_rest_answers_the_tools_exact_text(server):
    """Same session, same operation: the REST body is byte for byte the tool's answer."""
    store = server.store
    with server.client("alice") as rest:
        sid = _session(rest)
        saved = rest.post(
            f"/v1/sessions/{sid}/memories",
            json={"key": "lang", "content": "prefers Python over Go", "tags": ["pref"]},
        )
        assert saved.status_code == 200
        # saving the same key again at the same level answers the same text in-process
        assert saved.text == _tool(
            store, sid, "memory_save", key="lang", content="prefers Python over Go", tags=["pref"]
        )
        rest.put(f"/v1/sessions/{sid}/memories/editor", json={"content": "uses vim daily", "tags": ["pref"]})

        pairs = [
            (rest.get(f"/v1/sessions/{sid}/memories/lang"), _tool(store, sid, "memory_get", key="lang")),
            (
                rest.get(f"/v1/sessions/{sid}/memories/missing"),
                _tool(store, sid, "memory_get", key="missing"),
            ),
            (rest.get(f"/v1/sessions/{sid}/memories"), _tool(store, sid, "memory_list")),
            (
                rest.get(f"/v1/sessions/{sid}/memories", params={"tag": "pref"}),
                _tool(store, sid, "memory_list", tag="pref"),
            ),
            (
                rest.get(f"/v1/sessions/{sid}/search", params={"query": "python", "max_results": 5}),
                _tool(store, sid, "memory_search", query="python", max_results=5),
            ),
            (
                rest.post(f"/v1/sessions/{sid}/search", json={"query": "daily vim"}),
                _tool(store, sid, "memory_search", query="daily vim"),
            ),
            (
                rest.post(f"/v1/sessions/{sid}/memories", json={"key": "", "content": "x"}),
                _tool(store, sid, "memory_save", key="", content="x"),
            ),
            (
                rest.delete(f"/v1/sessions/{sid}/memories/nope"),
                _tool(store, sid, "memory_delete", key="nope"),
            ),
        ]
        for response, expected in pairs:
            assert response.text == expected
            assert response.headers["content-type"] == "application/json"

        deleted = rest.delete(f"/v1/sessions/{sid}/memories/editor")
        rest.put(f"/v1/sessions/{sid}/memories/editor", json={"content": "uses vim daily"})
        assert deleted.text == _tool(store, sid, "memory_delete", key="editor")

        _validate(saved.json(), "Saved")
        _validate(pairs[0][0].json(), "Memory")
        _validate(pairs[1][0].json(), "NotFound")
        _validate(pairs[2][0].json(), "Listing")
        _validate(pairs[4][0].json(), "SearchResults")
        _validate(pairs[6][0].json(), "Error")
        _validate(deleted.json(), "Deleted")
        _validate(rest.get(f"/v1/sessions/{sid}").json(), "Session")


def test_statuses_follow_the_error_codes(server):
    with server.client("alice") as rest:
        sid = _session(rest)
        base = f"/v1/sessions/{sid}"
        assert rest.get(f"{base}/memories/missing").status_code == 404  # body: {"found": false, ...}
        cases = [
            (
                rest.post(
                    f"{base}/memories", content=b"{not json", headers={"content-type": "application/json"}
                ),
                400,
                "VALIDATION_ERROR",
            ),
            (rest.post(f"{base}/memories", json=["a", "list"]), 400, "VALIDATION_ERROR"),
            (rest.post(f"{base}/memories", json={"key": "k"}), 400, "VALIDATION_ERROR"),
            (rest.put(f"{base}/memories/a", json={"key": "b", "content": "x"}), 400, "VALIDATION_ERROR"),
            (rest.post(f"{base}/escalate", json={"level": "TOP-SECRET"}), 400, "VALIDATION_ERROR"),
            (rest.post(f"{base}/escalate", json={}), 400, "VALIDATION_ERROR"),
            (rest.post(f"{base}/escalate", json={"level": "RESTRICTED"}), 403, "POLICY_BLOCKED"),
            (rest.post("/v1/sessions", json={"clearance": "RESTRICTED"}), 403, "POLICY_BLOCKED"),
            (
                rest.post(
                    f"{base}/memories",
                    json={
                        "key": "k",
                        "content": "password=hunter2hunter2 api_key=sk-abcdefabcdefabcdefabcdef",
                    },
                ),
                403,
                "POLICY_BLOCKED",
            ),
            (rest.delete(f"{base}/memories/never-saved"), 404, "NOT_FOUND"),
            (rest.get("/v1/sessions/no-such-session"), 404, "NOT_FOUND"),
            (rest.get("/v1/sessions/no-such-session/memories"), 404, "NOT_FOUND"),
            (rest.get("/v1/no-such-endpoint"), 404, "NOT_FOUND"),
            (rest.get("/v1/mcp-sessions/unknown"), 404, "NOT_FOUND"),
            (rest.delete(base), 405, "VALIDATION_ERROR"),
            (
                rest.post(
                    f"{base}/memories",
                    content=b"x" * (10 * 1024 * 1024),
                    headers={"content-type": "application/json"},
                ),
                413,
                "VALIDATION_ERROR",
            ),
            (rest.get("/v1/audit", params={"limit": "many"}), 400, "VALIDATION_ERROR"),
        ]
        for response, status, code in cases:
            assert (response.status_code, response.json()["error"]["code"]) == (status, code), response.text
            assert set(response.json()) == {"error"} and set(response.json()["error"]) == {"code", "message"}
        assert rest.get(base).json()["taint"] == "PUBLIC"  # the refused escalation changed nothing


def test_storage_errors_are_503_and_unexpected_ones_500(server, monkeypatch):
    with server.client("alice") as rest:
        sid = _session(rest)

        def unavailable(*args, **kwargs):
            raise StorageError("storage is unavailable: disk I/O error")

        monkeypatch.setattr(server.store.backend, "search", unavailable)
        answer = rest.get(f"/v1/sessions/{sid}/search", params={"query": "x"})
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "STORAGE_ERROR"

        def broken(*args, **kwargs):
            raise RuntimeError("secret internals")

        monkeypatch.setattr(server.store.backend, "search", broken)
        answer = rest.get(f"/v1/sessions/{sid}/search", params={"query": "x"})
        assert answer.status_code == 500 and answer.json()["error"]["code"] == "STORAGE_ERROR"
        assert "secret internals" not in answer.text


ENDPOINTS = [
    ("POST", "/v1/sessions"),
    ("GET", "/v1/sessions/s"),
    ("POST", "/v1/sessions/s/escalate"),
    ("POST", "/v1/sessions/s/reset"),
    ("GET", "/v1/sessions/s/memories"),
    ("POST", "/v1/sessions/s/memories"),
    ("GET", "/v1/sessions/s/memories/k"),
    ("PUT", "/v1/sessions/s/memories/k"),
    ("DELETE", "/v1/sessions/s/memories/k"),
    ("GET", "/v1/sessions/s/search"),
    ("POST", "/v1/sessions/s/search"),
    ("GET", "/v1/mcp-sessions/m"),
    ("GET", "/v1/audit"),
    ("GET", "/v1/audit/verify"),
    ("GET", "/v1/tools"),
    ("GET", "/v1/nowhere"),
    ("POST", "/mcp"),
]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer not-a-known-token-123"},
        {"Authorization": "Bearer"},
        {"Authorization": auth("alice")["Authorization"].replace("Bearer", "Token")},
    ],
)
def test_unauthenticated_requests_get_401_everywhere(server, headers):
    with httpx2.Client(base_url=server.url, headers=headers) as anonymous:
        for method, path in ENDPOINTS:
            answer = anonymous.request(method, path, json={})
            assert answer.status_code == 401, (method, path)
            assert answer.json()["error"]["code"] == "UNAUTHENTICATED"
        assert anonymous.get("/v1/health").json()["status"] == "ok"  # the probe stays public
        assert anonymous.get("/openapi.json").json()["openapi"].startswith("3.1")
        assert "stratamem" in anonymous.get("/docs").text


def test_sessions_of_other_principals_are_not_found(server):
    with server.client("alice") as alice, server.client("bob") as bob, server.client("intern") as intern:
        sid = _session(alice)
        alice.post(f"/v1/sessions/{sid}/memories", json={"key": "k", "content": "alice only"})
        for client in (bob, intern):  # another agent; the same agent but a lower clearance
            for method, path in [
                ("GET", ""),
                ("POST", "/escalate"),
                ("POST", "/reset"),
                ("GET", "/memories"),
                ("GET", "/memories/k"),
                ("GET", "/search?query=alice"),
            ]:
                answer = client.request(method, f"/v1/sessions/{sid}{path}", json={"level": "PUBLIC"})
                assert answer.status_code == 404, (method, path, answer.text)
                assert answer.json() == {"error": {"code": "NOT_FOUND", "message": f"no session {sid!r}"}}
        assert alice.get(f"/v1/sessions/{sid}/memories/k").json()["content"] == "alice only"


def test_escalation_and_reset(server):
    with server.client("alice") as rest:
        sid = _session(rest)
        up = rest.post(f"/v1/sessions/{sid}/escalate", json={"level": "internal", "reason": "read the wiki"})
        assert up.status_code == 200 and up.json()["taint"] == "INTERNAL"
        assert up.json()["taint_history"][-1] | {"time": None} == {
            "time": None,
            "previous": "PUBLIC",
            "new": "INTERNAL",
            "reason": "read the wiki",
            "source": "http:alice",
        }
        down = rest.post(f"/v1/sessions/{sid}/escalate", json={"level": "PUBLIC"})
        assert down.json()["taint"] == "INTERNAL"  # never lowers
        saved = rest.post(
            f"/v1/sessions/{sid}/memories",
            json={"key": "k", "content": "internal note", "classification": "PUBLIC"},
        )
        assert saved.json()["classification"] == "INTERNAL"  # a body cannot choose the level either
        fresh = rest.post(f"/v1/sessions/{sid}/reset")
        assert fresh.status_code == 201 and fresh.json()["taint"] == "PUBLIC" and fresh.json()["id"] != sid
        assert fresh.headers["location"] == f"/v1/sessions/{fresh.json()['id']}"
        assert rest.get(f"/v1/sessions/{fresh.json()['id']}/memories/k").json()["found"] is False


def test_capped_session_and_keys_with_slashes(server):
    with server.client("alice") as rest:
        capped = rest.post("/v1/sessions", json={"clearance": "INTERNAL"}).json()
        assert capped["clearance"] == "INTERNAL"
        assert (
            rest.post(f"/v1/sessions/{capped['id']}/escalate", json={"level": "CONFIDENTIAL"}).status_code
            == 403
        )
        key = "projects/alpha beta?#"
        path = f"/v1/sessions/{capped['id']}/memories/{quote(key, safe='')}"
        assert rest.put(path, json={"content": "odd key"}).json()["key"] == key
        assert rest.get(path).json()["content"] == "odd key"
    with server.client("intern") as intern:  # the same agent, but a session belongs to the token that made it
        assert intern.get(f"/v1/sessions/{capped['id']}").status_code == 404


def test_read_only_principal_cannot_write(server):
    with server.client("reader") as rest:
        sid = _session(rest)
        refused = rest.post(f"/v1/sessions/{sid}/memories", json={"key": "k", "content": "v"})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "POLICY_BLOCKED"
        assert rest.get(f"/v1/sessions/{sid}/memories").status_code == 200
        tools = rest.get("/v1/tools", params={"dialect": "anthropic"}).json()["tools"]
        assert [t["name"] for t in tools] == ["memory_get", "memory_search", "memory_list"]


def test_audit_is_limited_to_clearance_and_agent(server):
    with (
        server.client("alice") as alice,
        server.client("bob") as bob,
        server.client("intern") as intern,
        server.client("ops") as ops,
    ):
        a = _session(alice)
        alice.post(f"/v1/sessions/{a}/escalate", json={"level": "CONFIDENTIAL"})
        alice.post(f"/v1/sessions/{a}/memories", json={"key": "merger", "content": "confidential merger"})
        b = _session(bob)
        bob.post(f"/v1/sessions/{b}/memories", json={"key": "bobs-key", "content": "bob's note"})

        seen = alice.get("/v1/audit", params={"limit": 1000}).json()["events"]
        assert seen and {e["agent_id"] for e in seen} == {"alice"}
        assert "merger" in {k for e in seen for k in e["keys"]}
        assert all("confidential merger" not in json.dumps(e) for e in seen)  # no content in audit
        i = _session(intern)
        intern.get(f"/v1/sessions/{i}/memories")
        intern_seen = intern.get("/v1/audit", params={"limit": 1000}).json()["events"]
        assert intern_seen and all(e["taint"] in ("PUBLIC", "INTERNAL") for e in intern_seen)
        assert {e["session_id"] for e in intern_seen} == {i}  # its own sessions only, not alice's
        assert "merger" not in {k for e in intern_seen for k in e["keys"]}
        assert {e["agent_id"] for e in ops.get("/v1/audit", params={"limit": 1000}).json()["events"]} >= {
            "alice",
            "bob",
        }
        newest = seen[-1]["seq"]
        assert alice.get("/v1/audit", params={"after": newest}).json()["events"] == []
        assert alice.get("/v1/audit/verify").json() == {"intact": True}


def test_openapi_documents_every_route(server):
    doc = httpx2.get(f"{server.url}/openapi.json").json()
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    for method, path in [
        ("POST", "/v1/sessions"),
        ("GET", "/v1/sessions/{session_id}"),
        ("POST", "/v1/sessions/{session_id}/escalate"),
        ("PUT", "/v1/sessions/{session_id}/memories/{key}"),
        ("GET", "/v1/sessions/{session_id}/search"),
        ("GET", "/v1/audit"),
        ("GET", "/v1/health"),
        ("GET", "/v1/health/ready"),
        ("GET", "/metrics"),
    ]:
        assert (method, path) in documented
    for ops in doc["paths"].values():
        for op in ops.values():
            for response in op["responses"].values():
                for content in response["content"].values():  # JSON, and /metrics' text format
                    jsonschema.Draft202012Validator.check_schema(content["schema"])


def test_concurrent_clients_on_one_store(server):
    """Many clients at once: every write lands, every read answers, nothing errors."""
    import concurrent.futures

    with server.client("alice") as rest:
        sid = _session(rest)

    def worker(n: int) -> list[int]:
        statuses = []
        with server.client("alice") as client:
            for i in range(8):
                statuses.append(
                    client.put(
                        f"/v1/sessions/{sid}/memories/w{n}-{i}", json={"content": f"note {i} from worker {n}"}
                    ).status_code
                )
                statuses.append(
                    client.get(f"/v1/sessions/{sid}/search", params={"query": "note worker"}).status_code
                )
        return statuses

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        results = [s for batch in pool.map(worker, range(12)) for s in batch]
    assert set(results) == {200}
    assert len([m for m in server.store.export("alice") if m.key.startswith("w")]) == 12 * 8
    assert server.store.verify_audit() is None
    assert sm.Level.PUBLIC in {m.level for m in server.store.export("alice")}
