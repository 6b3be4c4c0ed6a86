"""The console API without a browser: sign-in, operator-only access, bounds, escaping, actions, headers."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from conftest import FakeClock
from server_support import auth, server, server_config, server_store  # noqa: F401

import stratamem as sm
from stratamem.server.ui import STRICT_CSP

XSS = ['<script>alert("x")</script>', '"><img src=x onerror=alert(1)>', "\u202eevil\u200b\u200d", "x" * 65536]


def _open(client, who: str = "ops", clearance: str = "RESTRICTED") -> dict[str, str]:
    answer = client.post("/v1/console/open", json={"clearance": clearance}, headers=auth(who))
    assert answer.status_code == 201, answer.text
    return {**auth(who), "X-Stratamem-Console": answer.json()["console"]}


def _seed(store: sm.Store) -> None:
    s = store.session("alice")
    for i, content in enumerate(XSS):
        s.save(f"xss-{i}", content, tags=["<b>tag</b>"])
    s.escalate("CONFIDENTIAL", "contract")
    s.save("deal", "price is 1.2M")


@pytest.fixture
def seeded(server):
    _seed(server.store)
    return server


def test_only_operators_sign_in_and_only_up_to_their_clearance(server):
    with server.client() as c:
        assert c.post("/v1/console/open", json={}).status_code == 401
        assert (
            c.post(
                "/v1/console/open", json={}, headers={"Authorization": "Bearer nope-nope-nope"}
            ).status_code
            == 401
        )
        refused = c.post("/v1/console/open", json={}, headers=auth("alice"))
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "POLICY_BLOCKED"
        assert c.post("/v1/console/open", json={"clearance": "TOP"}, headers=auth("ops")).status_code == 400
        opened = c.post("/v1/console/open", json={"clearance": "internal"}, headers=auth("ops")).json()
        assert opened["clearance"] == "INTERNAL" and opened["max_clearance"] == "RESTRICTED"
        events = [e for e in server.store.audit_events() if e.operation == "console.open"]
        assert events[-1].taint == sm.Level.INTERNAL and events[-1].detail["by"] == "ops"


def test_every_view_needs_the_console_id_of_the_same_operator(server):
    with server.client() as c:
        headers = _open(c)
        assert c.get("/v1/console/agents", headers=headers).status_code == 200
        assert c.get("/v1/console/agents", headers=auth("ops")).status_code == 401
        assert (
            c.get("/v1/console/agents", headers={**auth("ops"), "X-Stratamem-Console": "forged"}).status_code
            == 401
        )
        assert c.get("/v1/console/agents", headers={**headers, **auth("alice")}).status_code == 403
        assert (
            c.get(
                "/v1/console/agents", headers={"X-Stratamem-Console": headers["X-Stratamem-Console"]}
            ).status_code
            == 401
        )
        assert c.post("/v1/console/close", headers=headers).json() == {"closed": True}
        assert c.get("/v1/console/agents", headers=headers).status_code == 401


def test_a_console_sign_in_expires(tmp_path, server_config):
    from server_support import live_server

    clock = FakeClock()
    store = sm.open_store(str(tmp_path / "expiring.db"), clock=clock)
    try:
        with live_server(store, server_config) as live, live.client() as c:
            headers = _open(c)
            assert c.get("/v1/console/agents", headers=headers).status_code == 200
            clock.advance(timedelta(hours=9).total_seconds())
            expired = c.get("/v1/console/agents", headers=headers)
            assert expired.status_code == 401 and "expired" in expired.json()["error"]["message"]
    finally:
        store.close()


def test_bounds_and_bad_parameters(seeded):
    with seeded.client() as c:
        h = _open(c)
        base = "/v1/console/agents/alice/memories"
        assert len(c.get(base + "?limit=200", headers=h).json()["records"]) <= 200
        assert c.get(base + "?limit=100000", headers=h).status_code == 400  # refused, never clamped
        page = c.get(base + "?limit=2", headers=h).json()
        assert len(page["records"]) == 2 and page["next"]
        rest = c.get(base, params={"after": page["next"]}, headers=h).json()["records"]
        assert len(rest) == 3 and {r["key"] for r in rest}.isdisjoint({r["key"] for r in page["records"]})
        for bad in (
            "limit=abc",
            "after=not-a-cursor",
            "after=WzFd",
            "status=bogus",
            "level=TOP",
            "text=" + "x" * 1001,
        ):
            answer = c.get(f"{base}?{bad}", headers=h)
            assert answer.status_code == 400, bad
            assert answer.json()["error"]["code"] == "VALIDATION_ERROR"
        for bad in ("limit=-5", "limit=5000", "limit=0"):  # out of range: refused naming it, as every route
            answer = c.get(f"/v1/console/audit?{bad}", headers=h)
            assert answer.status_code == 400 and "limit" in answer.json()["error"]["message"], bad
        assert len(c.get("/v1/console/audit?limit=200", headers=h).json()["events"]) <= 200
        assert c.get("/v1/console/sessions?after=%%%", headers=h).status_code == 400
        assert c.get("/v1/console/records/999999", headers=h).status_code == 404
        huge = "/v1/console/records/" + "9" * 25  # beyond any SQL integer: the same NOT_FOUND, not a 500
        assert c.get(huge, headers=h).status_code == 404
        assert c.post(huge + "/restore", json={"confirm": True}, headers=h).status_code == 404
        assert c.post(huge + "/delete", json={"confirm": True}, headers=h).status_code == 404
        assert c.get("/v1/console/agents/" + "a" * 200 + "/memories", headers=h).status_code == 400
        assert c.post("/v1/console/agents/alice/search", content=b"[1,", headers=h).status_code == 400
        assert c.post("/v1/console/agents/alice/search", content=b"x" * 70_000, headers=h).status_code == 413


def test_hostile_content_comes_back_as_exact_json_strings(seeded):
    with seeded.client() as c:
        h = _open(c)
        answer = c.get("/v1/console/agents/alice/memories?limit=200", headers=h)
        assert answer.headers["content-type"] == "application/json"
        records = {r["key"]: r for r in answer.json()["records"]}
        assert records["xss-0"]["content"] == XSS[0] and records["xss-1"]["content"] == XSS[1]
        assert records["xss-0"]["tags"] == ["<b>tag</b>"]
        big = records["xss-3"]
        assert big["truncated"] and big["content_chars"] == 65536 and len(big["content"]) == 400
        full = c.get(f"/v1/console/records/{big['ref']}", headers=h).json()["record"]
        assert full["content"] == XSS[3]


def test_clearance_hides_higher_records_everywhere(seeded):
    with seeded.client() as c:
        low = _open(c, clearance="INTERNAL")
        keys = {r["key"] for r in c.get("/v1/console/agents/alice/memories", headers=low).json()["records"]}
        assert "deal" not in keys
        agents = c.get("/v1/console/agents", headers=low).json()["agents"]
        assert agents == [{"agent_id": "alice", "live": {"PUBLIC": 4}, "deleted": {}, "expired": {}}]
        hits = c.post("/v1/console/agents/alice/search", json={"query": "price"}, headers=low).json()[
            "results"
        ]
        assert hits == []
        lines = c.get("/v1/console/agents/alice/export", headers=low).text.splitlines()
        assert len(lines) == 4 and all(json.loads(line)["level"] == "PUBLIC" for line in lines)
        high = _open(c, clearance="CONFIDENTIAL")
        hits = c.post("/v1/console/agents/alice/search", json={"query": "price"}, headers=high).json()[
            "results"
        ]
        assert [(h["key"], h["matched"]) for h in hits] == [("deal", ["price"])]
        taints = {e["taint"] for e in c.get("/v1/console/audit?limit=200", headers=low).json()["events"]}
        assert taints <= {"PUBLIC", "INTERNAL"}


def test_actions_need_confirmation_and_are_audited(seeded):
    with seeded.client() as c:
        h = _open(c)
        ref = next(
            r["ref"]
            for r in c.get("/v1/console/agents/alice/memories", headers=h).json()["records"]
            if r["key"] == "deal"
        )
        assert c.post(f"/v1/console/records/{ref}/delete", json={}, headers=h).status_code == 400
        assert c.post(f"/v1/console/records/{ref}/delete", json={"confirm": True}, headers=h).json() == {
            "deleted": True,
            "key": "deal",
        }
        record = c.get(f"/v1/console/records/{ref}", headers=h).json()
        assert record["record"]["state"] == "deleted"
        assert (
            c.post(f"/v1/console/records/{ref}/restore", json={"confirm": "yes"}, headers=h).status_code
            == 400
        )
        restored = c.post(f"/v1/console/records/{ref}/restore", json={"confirm": True}, headers=h).json()
        assert restored["restored"] is True and restored["key"] == "deal"
        ops = [e.operation for e in seeded.store.audit_events()]
        assert "delete" in ops and "restore" in ops
        low = _open(c, clearance="INTERNAL")
        refused = c.post(
            "/v1/console/purge", json={"confirm": True, "before": "2999-01-01T00:00:00+00:00"}, headers=low
        )
        assert refused.status_code == 403
        assert (
            c.post("/v1/console/purge", json={"confirm": True, "before": "tomorrow"}, headers=h).status_code
            == 400
        )
        assert (
            c.post(
                "/v1/console/purge", json={"confirm": True, "before": "2000-01-01T00:00:00"}, headers=h
            ).status_code
            == 400
        )  # no timezone
        purged = c.post(
            "/v1/console/purge", json={"confirm": True, "before": "2000-01-01T00:00:00+00:00"}, headers=h
        )
        assert purged.json()["purged"] == 0
        verify = c.post("/v1/console/audit/verify", headers=h).json()
        assert verify == {"intact": True}


def test_a_records_lineage_collapses_the_consoles_own_reads_unless_asked(seeded):
    with seeded.client() as c:
        h = _open(c)
        for _ in range(3):
            records = c.get("/v1/console/agents/alice/memories", headers=h).json()["records"]
        ref = next(r["ref"] for r in records if r["key"] == "deal")
        lineage = c.get(f"/v1/console/records/{ref}", headers=h).json()["lineage"]
        assert [e["operation"] for e in lineage["events"]] == ["save"]
        assert lineage["console_reads"] == {"count": 4, "capped": False, "shown": False}
        shown = c.get(f"/v1/console/records/{ref}?console_reads=show", headers=h).json()["lineage"]
        assert [e["operation"] for e in shown["events"]] == [
            *["console.record"] * 2,
            *["console.memories"] * 3,
            "save",
        ]
        assert shown["console_reads"] == {"count": 5, "capped": False, "shown": True}
        bad = c.get(f"/v1/console/records/{ref}?console_reads=all", headers=h)
        assert bad.status_code == 400 and "console_reads" in bad.json()["error"]["message"]


def test_a_graph_node_answers_within_the_clearance(seeded):
    store = seeded.store
    if not hasattr(store.backend, "graph"):
        pytest.skip("this store has no knowledge graph")
    writer = store.session("alice")
    writer.graph.capture("Sam", "person", observations=["likes tea"])
    writer.escalate("CONFIDENTIAL", "contract")
    writer.graph.capture("Deal", "contract")
    writer.graph.relate("Sam", "Deal", "negotiates")
    with seeded.client() as c:
        low, high = _open(c, clearance="INTERNAL"), _open(c, clearance="CONFIDENTIAL")
        path = "/v1/console/graph/node"
        answer = c.get(path, params={"agent": "alice", "name": "Sam"}, headers=low).json()
        assert answer["node"]["observations"][0]["text"] == "likes tea" and answer["edges"] == []
        answer = c.get(path, params={"agent": "alice", "name": "Sam"}, headers=high).json()
        assert [(e["direction"], e["relation"], e["neighbour"]["name"]) for e in answer["edges"]] == [
            ("out", "negotiates", "Deal")
        ]
        assert c.get(path, params={"agent": "alice", "name": "Deal"}, headers=low).status_code == 404
        assert c.get(path, params={"agent": "alice"}, headers=low).status_code == 400
        assert c.get(path, params={"agent": "alice", "name": "Sam"}, headers=auth("ops")).status_code == 401


def test_optional_views_say_when_the_store_lacks_them(server):
    with server.client() as c:
        h = _open(c)
        for path in ("/v1/console/usage", "/v1/console/graph?agent=alice"):
            answer = c.get(path, headers=h).json()
            if not answer["available"]:
                assert "not available in this store" in answer["reason"]


def test_pages_are_local_and_carry_security_headers(server):
    with server.client() as c:
        root = c.get("/", follow_redirects=False)
        assert root.status_code == 307 and root.headers["location"] == "/ui"
        page = c.get("/ui")
        assert page.status_code == 200 and page.headers["content-security-policy"] == STRICT_CSP
        assert page.headers["x-content-type-options"] == "nosniff"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert "https://" not in page.text and "<style" not in page.text and "onclick" not in page.text
        script = c.get("/ui/assets/console.js")
        assert script.status_code == 200
        assert not any(
            sink in script.text for sink in (".innerHTML", "outerHTML", "insertAdjacentHTML", "eval(")
        )
        docs = c.get("/docs")
        assert docs.status_code == 200 and "cdn." not in docs.text and "https://" not in docs.text
        assert c.get("/docs/swagger/swagger-ui-bundle.js").status_code == 200
        assert c.get("/docs/openapi-3.0.json").json()["openapi"] == "3.0.3"
        api = c.get("/v1/console/agents")
        assert api.status_code == 401 and api.headers["cache-control"] == "no-store"


def test_an_edited_audit_row_is_shown_as_unreadable_and_verify_names_it(seeded, tmp_path):
    import sqlite3

    with seeded.client() as c:
        h = _open(c)
        with sqlite3.connect(tmp_path / "memory.db") as conn:
            conn.execute("UPDATE audit SET levels = 'not json' WHERE seq = 2")
        events = c.get("/v1/console/audit?limit=200", headers=h).json()["events"]
        assert {"seq": 2, "unreadable": True} in events
        assert c.post("/v1/console/audit/verify", headers=h).json() == {"intact": False, "first_bad_seq": 2}
