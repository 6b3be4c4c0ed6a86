"""The console's session list hides the sessions CLI commands open for themselves unless asked."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

from server_support import auth, server, server_config, server_store  # noqa: F401

from stratamem.storage.records import ONE_SHOT_PREFIX

# look-alikes of the prefix that are named sessions: a case change (SQLite's LIKE ignores case), the
# prefix without its last character
NAMED = ("named-work", ONE_SHOT_PREFIX.upper() + "x", ONE_SHOT_PREFIX[:-1])


def _open(client) -> dict[str, str]:
    answer = client.post("/v1/console/open", json={"clearance": "RESTRICTED"}, headers=auth("ops"))
    assert answer.status_code == 201, answer.text
    return {**auth("ops"), "X-Stratamem-Console": answer.json()["console"]}


def _ids(client, headers, query: str = "") -> dict[str, bool]:
    answer = client.get(f"/v1/console/sessions?agent=alice{query}", headers=headers)
    assert answer.status_code == 200, answer.text
    return {s["id"]: s["one_shot"] for s in answer.json()["sessions"]}


def test_one_shot_sessions_are_hidden_by_default_and_shown_on_request(server):
    for sid in (*NAMED, f"{ONE_SHOT_PREFIX}1", f"{ONE_SHOT_PREFIX}2"):
        server.store.session("alice", session_id=sid)
    with server.client() as c:
        h = _open(c)
        assert _ids(c, h) == dict.fromkeys(NAMED, False)
        assert _ids(c, h, "&one_shot=hide") == dict.fromkeys(NAMED, False)
        shown = _ids(c, h, "&one_shot=show")
        assert shown == {
            **dict.fromkeys(NAMED, False),
            f"{ONE_SHOT_PREFIX}1": True,
            f"{ONE_SHOT_PREFIX}2": True,
        }
        for bad in ("one_shot=maybe", "one_shot=", "one_shot=HIDE"):
            answer = c.get(f"/v1/console/sessions?{bad}", headers=h)
            assert answer.status_code == 400, bad
            assert answer.json()["error"]["code"] == "VALIDATION_ERROR"
    reads = [e for e in server.store.audit_events() if e.operation == "console.sessions"]
    assert [e.detail["one_shot"] for e in reads] == [False, False, True]


def test_hidden_one_shot_sessions_do_not_shorten_a_page(server):
    for i in range(3):
        server.store.session("alice", session_id=f"named-{i}")
        server.store.session("alice", session_id=f"{ONE_SHOT_PREFIX}{i}")
    with server.client() as c:
        h = _open(c)
        first = c.get("/v1/console/sessions?agent=alice&limit=2", headers=h).json()
        rest = c.get("/v1/console/sessions", params={"agent": "alice", "after": first["next"]}, headers=h)
        ids = [s["id"] for s in first["sessions"] + rest.json()["sessions"]]
        assert sorted(ids) == ["named-0", "named-1", "named-2"]


def test_the_parameter_is_documented(server):
    with server.client() as c:
        doc = c.get("/openapi.json").json()
    params = doc["paths"]["/v1/console/sessions"]["get"]["parameters"]
    one_shot = next(p for p in params if p["name"] == "one_shot")
    assert one_shot["schema"] == {"type": "string", "enum": ["hide", "show"]}
