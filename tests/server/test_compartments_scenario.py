"""Need-to-know end to end over REST, against a real ``stratamem serve --config``.

An HR agent and a finance agent share one store at CONFIDENTIAL (peers: each reads the other's memories) and
never see each other's compartment; a session cleared for both writes, once it entered HR, HR-labelled records
only; a record declassified by one operator and approved by a second appears to PUBLIC sessions with its
audit trail; an agent token cannot declassify, and a console opened without HR cannot move an HR record.
"""

from __future__ import annotations

import httpx2
import pytest
from server_support import served_with_config

import stratamem as sm
from stratamem.server.principals import token_digest

TOKENS = {
    "hr": "hr-agent-token-0123456789",
    "finance": "finance-token-0123456789",
    "both": "both-token-012345678901",
    "public": "public-token-0123456789",
    "ops1": "ops1-token-0123456789abc",
    "ops2": "ops2-token-0123456789abc",
    "ops-plain": "ops-plain-token-01234567",
}


def _principal(name: str, agent: str, clearance: str, extra: str = "") -> str:
    return (
        f'[[principals]]\nname = "{name}"\ntoken_sha256 = "{token_digest(TOKENS[name])}"\n'
        f'agent = "{agent}"\nclearance = "{clearance}"\n{extra}'
    )


CONFIG = "\n".join(
    [
        '[compartments]\nnames = ["HR", "FINANCE"]\n',
        "[declassify]\nrequire_approval = true\n",
        _principal("hr", "hr", "CONFIDENTIAL", 'compartments = ["HR"]\npeers = ["finance"]\n'),
        _principal("finance", "finance", "CONFIDENTIAL", 'compartments = ["FINANCE"]\npeers = ["hr"]\n'),
        _principal("both", "hr", "CONFIDENTIAL", 'compartments = ["HR", "FINANCE"]\npeers = ["finance"]\n'),
        _principal("public", "hr", "PUBLIC", 'peers = ["finance"]\n'),
        _principal("ops1", "ops", "RESTRICTED", 'compartments = ["HR", "FINANCE"]\noperator = true\n'),
        _principal("ops2", "ops", "RESTRICTED", 'compartments = ["HR", "FINANCE"]\noperator = true\n'),
        _principal("ops-plain", "ops", "RESTRICTED", "operator = true\n"),
    ]
)


@pytest.fixture
def served(tmp_path):
    with served_with_config(tmp_path, CONFIG) as live:
        yield live


def _client(url: str, who: str) -> httpx2.Client:
    return httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {TOKENS[who]}"}, timeout=30)


def _session(client: httpx2.Client, level: str | None = None, compartment: str | None = None) -> str:
    opened = client.post("/v1/sessions")
    assert opened.status_code == 201, opened.text
    sid = opened.json()["id"]
    if level:
        raised = client.post(f"/v1/sessions/{sid}/escalate", json={"level": level, "reason": "work"})
        assert raised.status_code == 200, raised.text
    if compartment:
        entered = client.post(
            f"/v1/sessions/{sid}/enter", json={"compartment": compartment, "reason": "work"}
        )
        assert entered.status_code == 200, entered.text
    return sid


def _get(client: httpx2.Client, sid: str, key: str) -> dict:
    answer = client.get(f"/v1/sessions/{sid}/memories/{key}")
    assert answer.status_code in (200, 404), answer.text
    return answer.json()


def _found(client: httpx2.Client, sid: str, query: str) -> set[str]:
    answer = client.get(f"/v1/sessions/{sid}/search", params={"query": query})
    assert answer.status_code == 200, answer.text
    return {hit["key"] for hit in answer.json()["results"]}


def _console(client: httpx2.Client, clearance: str) -> dict[str, str]:
    opened = client.post("/v1/console/open", json={"clearance": clearance})
    assert opened.status_code == 201, opened.text
    return {"X-Stratamem-Console": opened.json()["console"]}


def test_need_to_know_end_to_end(served):
    url, db = served
    with (
        _client(url, "hr") as hr,
        _client(url, "finance") as finance,
        _client(url, "both") as both,
        _client(url, "public") as public,
    ):
        hr_sid = _session(hr, "CONFIDENTIAL", "HR")
        fin_sid = _session(finance, "CONFIDENTIAL", "FINANCE")
        saved = hr.put(
            f"/v1/sessions/{hr_sid}/memories/case-114", json={"content": "review of the payroll case"}
        )
        assert saved.json()["compartments"] == ["HR"]
        finance.put(f"/v1/sessions/{fin_sid}/memories/forecast", json={"content": "payroll forecast for Q3"})

        # peers at one level, different compartments: neither sees the other's
        assert _get(finance, fin_sid, "case-114") == {"found": False, "key": "case-114"}
        assert _get(hr, hr_sid, "forecast") == {"found": False, "key": "forecast"}
        assert _found(finance, fin_sid, "payroll") == {"forecast"}
        assert _found(hr, hr_sid, "payroll") == {"case-114"}
        listed = finance.get(f"/v1/sessions/{fin_sid}/memories").json()
        assert [m["key"] for m in listed["memories"]] == ["forecast"]

        # cleared for both, entered HR only: it reads HR, not FINANCE, and what it writes is HR-labelled
        both_sid = _session(both, "CONFIDENTIAL", "HR")
        assert _get(both, both_sid, "case-114")["found"] is True
        assert _get(both, both_sid, "forecast")["found"] is False
        note = both.put(f"/v1/sessions/{both_sid}/memories/joint-note", json={"content": "payroll note"})
        assert note.json()["classification"] == "CONFIDENTIAL" and note.json()["compartments"] == ["HR"]
        assert _get(finance, fin_sid, "joint-note")["found"] is False
        assert _get(hr, hr_sid, "joint-note")["found"] is True

        public_sid = _session(public)
        assert _get(public, public_sid, "case-114")["found"] is False

        # the audit API: a token sees its own sessions' events within its label, compartments included
        def audited(client: httpx2.Client) -> set[str]:
            answer = client.get("/v1/audit", params={"limit": 200})
            assert answer.status_code == 200, answer.text
            return {key for event in answer.json()["events"] for key in event["keys"]}

        assert "case-114" in audited(hr) and "forecast" in audited(finance)
        assert "case-114" not in audited(finance)

    # an agent token cannot declassify (no console for it, nor an agent route)
    order = {
        "agent": "hr",
        "key": "case-114",
        "from": "CONFIDENTIAL+HR",
        "to": "PUBLIC",
        "reason": "announced",
    }
    with _client(url, "hr") as agent:
        refused = agent.post("/v1/console/open", json={"clearance": "CONFIDENTIAL"})
        assert refused.status_code in (401, 403)
        assert agent.post("/v1/console/declassify", json={**order, "confirm": True}).status_code in (401, 403)
        assert agent.post("/v1/declassify", json=order).status_code in (404, 405)

    # a console opened without HR cannot move an HR record (as if it did not exist)
    with _client(url, "ops-plain") as plain_ops:
        headers = _console(plain_ops, "RESTRICTED")
        hidden = plain_ops.post("/v1/console/declassify", json={**order, "confirm": True}, headers=headers)
        assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "NOT_FOUND"

    # two operators: one asks, the other approves; the record then appears to PUBLIC sessions
    with _client(url, "ops1") as ops1, _client(url, "ops2") as ops2, _client(url, "public") as public:
        asked = ops1.post(
            "/v1/console/declassify", json={**order, "confirm": True}, headers=_console(ops1, "RESTRICTED+HR")
        )
        assert asked.status_code == 201 and asked.json()["status"] == "pending", asked.text
        request_id = asked.json()["id"]
        public_sid = _session(public)
        assert _get(public, public_sid, "case-114")["found"] is False  # nothing moves before the approval
        self_approval = ops1.post(
            f"/v1/console/declassify/{request_id}/approve",
            json={"confirm": True},
            headers=_console(ops1, "RESTRICTED+HR"),
        )
        assert self_approval.status_code == 403
        approved = ops2.post(
            f"/v1/console/declassify/{request_id}/approve",
            json={"confirm": True},
            headers=_console(ops2, "RESTRICTED+HR"),
        )
        assert approved.status_code == 200 and approved.json()["status"] == "done", approved.text
        shown = _get(public, public_sid, "case-114")
        assert shown["found"] is True and shown["content"] == "review of the payroll case"
        assert shown["classification"] == "PUBLIC" and "compartments" not in shown

    # the audit trail: who asked, who approved, from, to, why and the content's hash
    with sm.open_store(str(db)) as store:
        (event,) = [e for e in store.audit_events() if e.operation == "declassify"]
        assert event.keys == ("case-114",) and event.agent_id == "hr"
        detail = event.detail
        assert (
            detail["from"] == "CONFIDENTIAL+HR"
            and detail["to"] == "PUBLIC"
            and detail["reason"] == "announced"
        )
        assert (
            detail["actor"] == "ops1" and detail["approver"] == "ops2" and len(detail["content_sha256"]) == 64
        )
        assert store.verify_audit() is None
        # the original stays at its label
        original = store.session("hr", clearance="CONFIDENTIAL", compartments={"HR"})
        original.escalate("CONFIDENTIAL", "check")
        original.enter("HR", "check")
        assert original.get("case-114").compartments == {"HR"}
