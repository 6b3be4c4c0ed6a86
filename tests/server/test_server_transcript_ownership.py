"""A transcript id names a session: it passes the same ownership rule as the path's session.

Two principals of one agent (``alice`` and ``intern``) share the agent's
memories but not their sessions. A transcript belongs to a session, so
``transcript_id`` naming a session another principal created must read
exactly as one naming no session at all — same status, body, headers and
audit event — over REST, over the ``/mcp-turns`` tool, and on stdio (whose
one session is the only one it knows).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_support import auth, write_config
from starlette.testclient import TestClient

import stratamem as sm
from stratamem.policy.engine import DEFAULT_POLICY
from stratamem.server.app import build_app
from stratamem.server.config import load_config
from stratamem.server.mcp_turns import OneSession
from stratamem.server.principals import Principals
from stratamem.server.state import ServerState
from stratamem.server.turn_ops import TurnOps
from stratamem.session import Session
from stratamem.turn import Message, Transcript

SECRET = "the vault code is 4521"
MISSING = "no-such-session"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}


class Server:
    def __init__(self, store: sm.Store, state: ServerState) -> None:
        self.store = store
        self.state = state
        self.app = build_app(state, host="127.0.0.1")

    def client(self, who: str, app: Any = None) -> TestClient:
        """A client of the app (REST needs no lifespan: use it without ``with``).

        ``app``: a fresh ``build_app`` for a client entered with ``with`` (its MCP session
        managers run once per app). A loopback base URL: a loopback server checks the Host.
        """
        return TestClient(
            app or self.app,
            base_url="http://127.0.0.1:8000",
            headers=auth(who),
            raise_server_exceptions=False,
        )


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp("transcripts")
    config = load_config(write_config(directory))
    store = sm.open_store(str(directory / "memory.db"))
    state = ServerState(store, Principals(config.principals), profile=config.profile)
    try:
        yield Server(store, state)
    finally:
        store.close()


def _session(client: TestClient, level: str = "INTERNAL") -> str:
    sid = client.post("/v1/sessions").json()["id"]
    assert client.post(f"/v1/sessions/{sid}/escalate", json={"level": level}).status_code == 200
    return sid


def _victim(served: Server) -> str:
    """A session ``alice`` created over REST and escalated, whose transcript holds the secret."""
    sid = _session(served.client("alice"))
    _said(Session(served.store, sid), SECRET)
    return sid


def _said(session: Session, content: str) -> None:
    Transcript(session).append(Message("user", content), Message("assistant", content))


def _last_event(client: TestClient) -> dict[str, Any]:
    """The newest audit event the principal may read, without what differs between any two events."""
    event = client.get("/v1/audit", params={"limit": 1}).json()["events"][-1]
    return {k: v for k, v in event.items() if k not in ("seq", "time", "hash")}


def _transcript(client: TestClient, sid: str, params: dict[str, Any]) -> tuple[int, bytes, list, dict]:
    # the same request id for both reads: the response echoes it, so it may not tell them apart either
    answer = client.get(
        f"/v1/sessions/{sid}/transcript", params=params, headers={"X-Request-Id": "same-probe"}
    )
    return answer.status_code, answer.content, answer.headers.multi_items(), _last_event(client)


def test_another_principals_transcript_reads_exactly_as_a_missing_one_over_rest(served) -> None:
    victim = _victim(served)
    intern = served.client("intern")
    own = _session(intern)
    theirs = _transcript(intern, own, {"transcript_id": victim})
    missing = _transcript(intern, own, {"transcript_id": MISSING})
    assert SECRET.encode() not in theirs[1]
    assert theirs == missing
    assert missing[:2] == (200, b'{"messages": [], "start": 0, "total": 0, "next": null}')


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(0, 5), limit=st.integers(0, 5))
def test_not_yours_is_missing_for_every_range(served, start: int, limit: int) -> None:
    victim = _victim(served)
    intern = served.client("intern")
    own = _session(intern)
    params = {"start": start, "limit": limit}
    theirs = _transcript(intern, own, {**params, "transcript_id": victim})
    missing = _transcript(intern, own, {**params, "transcript_id": MISSING})
    assert theirs == missing


def test_the_owner_still_reads_its_own_earlier_transcript(served) -> None:
    victim = _victim(served)
    alice = served.client("alice")
    fresh = alice.post(f"/v1/sessions/{victim}/reset").json()["id"]
    alice.post(f"/v1/sessions/{fresh}/escalate", json={"level": "INTERNAL"})
    page = alice.get(f"/v1/sessions/{fresh}/transcript", params={"transcript_id": victim}).json()
    assert page["total"] == 2 and [m["content"] for m in page["messages"]] == [SECRET, SECRET]


def _mcp_transcript(client: TestClient, mcp_session: str, arguments: dict[str, Any]) -> tuple[int, bytes]:
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "transcript", "arguments": arguments},
    }
    answer = client.post("/mcp-turns", json=call, headers={**MCP_HEADERS, "mcp-session-id": mcp_session})
    return answer.status_code, answer.content


def test_another_principals_transcript_reads_exactly_as_a_missing_one_over_mcp_turns(served) -> None:
    victim = _victim(served)
    with served.client("intern", build_app(served.state, host="127.0.0.1")) as intern:
        own = _session(intern)
        opened = intern.post(
            "/mcp-turns",
            headers=MCP_HEADERS,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            },
        )
        assert opened.status_code == 200, opened.text
        mcp_session = opened.headers["mcp-session-id"]
        intern.post(
            "/mcp-turns",
            headers={**MCP_HEADERS, "mcp-session-id": mcp_session},
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
        theirs = _mcp_transcript(intern, mcp_session, {"session_id": own, "transcript_id": victim})
        their_event = _last_event(intern)
        missing = _mcp_transcript(intern, mcp_session, {"session_id": own, "transcript_id": MISSING})
        missing_event = _last_event(intern)
    assert theirs[0] == 200 and SECRET.encode() not in theirs[1]
    assert theirs == missing
    assert their_event == missing_event


def test_stdio_reads_only_its_own_sessions_transcript(served) -> None:
    store = served.store
    other = store.session("alice")
    _said(other, SECRET)
    mine = store.session("alice")
    ops = TurnOps(OneSession(mine, DEFAULT_POLICY))
    theirs = ops.transcript(None, mine.id, {"transcript_id": other.id})
    assert theirs == ops.transcript(None, mine.id, {"transcript_id": MISSING})
    assert theirs["total"] == 0
    _said(mine, "hello")
    assert ops.transcript(None, mine.id, {"transcript_id": mine.id})["total"] == 2
