"""Any request to any server: two servers on one store answer as one (bindings, console, idempotency).

Each server here has its own ``Store`` object on the same database file, so
nothing but the store connects them; what one server keeps in its memory
only is invisible to the other, which is what these tests would catch.
"""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from conftest import FakeClock
from server_support import LiveServer, auth, live_server, mcp_http, server_config  # noqa: F401

import stratamem as sm


@contextlib.contextmanager
def _two(path: Path, config: Path, clock: FakeClock | None = None) -> Iterator[tuple[LiveServer, LiveServer]]:
    options = {} if clock is None else {"clock": clock}
    first, second = sm.open_store(str(path), **options), sm.open_store(str(path), **options)
    try:
        with live_server(first, config) as a, live_server(second, config) as b:
            yield a, b
    finally:
        first.close()
        second.close()


@pytest.fixture
def pair(tmp_path, server_config) -> Iterator[tuple[LiveServer, LiveServer]]:
    with _two(tmp_path / "shared.db", server_config) as servers:
        yield servers


def _files(directory: Path) -> bytes:
    """Every byte of the shared store: the database, its WAL and shared memory."""
    return b"".join(p.read_bytes() for p in sorted(directory.glob("shared.db*")))


def _session(server: LiveServer, who: str = "alice") -> str:
    with server.client(who) as c:
        answer = c.post("/v1/sessions", json={})
        assert answer.status_code == 201
        return answer.json()["id"]


def test_an_mcp_binding_made_on_one_server_is_found_and_escalated_on_the_other(pair):
    a, b = pair

    async def scenario() -> None:
        async with mcp_http(a.url, "alice") as mcp:
            await mcp.call("memory_save", key="note", content="public words")
            mcp_session = mcp.response_headers[-1]["mcp-session-id"]
            bound = mcp.response_headers[-1]["x-stratamem-session-id"]
            with b.client("alice") as rest:
                found = rest.get(f"/v1/mcp-sessions/{mcp_session}")
                assert found.status_code == 200 and found.json()["id"] == bound
                raised = rest.post(
                    f"/v1/sessions/{bound}/escalate", json={"level": "CONFIDENTIAL", "reason": "r"}
                )
                assert raised.status_code == 200
            with b.client("bob") as other:  # another principal learns nothing about it
                assert other.get(f"/v1/mcp-sessions/{mcp_session}").status_code == 404
            error, saved = await mcp.call("memory_save", key="contract", content="terms")
            assert not error and saved["classification"] == "CONFIDENTIAL"
        with b.client("alice") as rest:  # closed on A: gone on B too
            assert rest.get(f"/v1/mcp-sessions/{mcp_session}").status_code == 404

    anyio.run(scenario)


def test_mcp_session_ids_are_stored_hashed(tmp_path, server_config):
    with _two(tmp_path / "shared.db", server_config) as (a, _):

        async def scenario() -> str:
            async with mcp_http(a.url, "alice") as mcp:
                await mcp.call("memory_list")
                return mcp.response_headers[-1]["mcp-session-id"]

        mcp_session = anyio.run(scenario)
    assert _files(tmp_path)  # the binding was written (into the database or its WAL)
    assert mcp_session.encode() not in _files(tmp_path)


def test_a_console_opened_on_one_server_answers_on_the_other_and_closes_everywhere(tmp_path, pair):
    a, b = pair
    with a.client() as ca, b.client() as cb:
        opened = ca.post("/v1/console/open", json={"clearance": "INTERNAL"}, headers=auth("ops"))
        assert opened.status_code == 201
        headers = {**auth("ops"), "X-Stratamem-Console": opened.json()["console"]}
        assert cb.get("/v1/console/agents", headers=headers).status_code == 200
        assert opened.json()["console"].encode() not in _files(tmp_path)  # kept hashed
        assert ca.get("/v1/console/agents", headers=headers).status_code == 200
        # the sign-in is the operator's: another token with the same id is refused
        # a key on the sign-in is ignored: its answer (a credential) is never stored
        keyed = {**auth("ops"), "Idempotency-Key": "open-console"}
        twice = [ca.post("/v1/console/open", json={}, headers=keyed).json()["console"] for _ in range(2)]
        assert twice[0] != twice[1]
        stolen = {**auth("alice"), "X-Stratamem-Console": opened.json()["console"]}
        assert cb.get("/v1/console/agents", headers=stolen).status_code in (401, 403)
        assert cb.post("/v1/console/close", headers=headers).status_code == 200
        refused = ca.get("/v1/console/agents", headers=headers)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "UNAUTHENTICATED"


def test_a_console_sign_in_expires_on_every_server(tmp_path, server_config):
    clock = FakeClock()
    with _two(tmp_path / "shared.db", server_config, clock) as (a, b), a.client() as ca, b.client() as cb:
        opened = ca.post("/v1/console/open", json={}, headers=auth("ops"))
        headers = {**auth("ops"), "X-Stratamem-Console": opened.json()["console"]}
        assert cb.get("/v1/console/agents", headers=headers).status_code == 200
        clock.advance(timedelta(hours=9).total_seconds())
        assert cb.get("/v1/console/agents", headers=headers).status_code == 401
        assert ca.get("/v1/console/agents", headers=headers).status_code == 401


def test_a_retried_write_replays_its_first_answer_on_any_server(pair):
    a, b = pair
    sid = _session(a)
    key = {"Idempotency-Key": "delete-note-7f3a"}
    with a.client("alice") as ca, b.client("alice") as cb:
        assert ca.put(f"/v1/sessions/{sid}/memories/note", json={"content": "x"}).status_code == 200
        first = ca.delete(f"/v1/sessions/{sid}/memories/note", headers=key)
        assert first.status_code == 200 and first.json()["deleted"] is True
        again = cb.delete(f"/v1/sessions/{sid}/memories/note", headers=key)  # the answer was lost: retry
        assert (again.status_code, again.content) == (first.status_code, first.content)
        assert again.headers["idempotent-replayed"] == "true"
        # without the key the same request runs again (and finds nothing to delete)
        assert cb.delete(f"/v1/sessions/{sid}/memories/note").status_code == 404
        created = ca.post("/v1/sessions", json={}, headers={"Idempotency-Key": "open-1"})
        replayed = cb.post("/v1/sessions", json={}, headers={"Idempotency-Key": "open-1"})
        assert replayed.json()["id"] == created.json()["id"] and replayed.status_code == 201
        assert replayed.headers["location"] == created.headers["location"]
    saves = [e for e in a.store.audit_events() if e.operation == "delete" and e.outcome == "ok"]
    assert len(saves) == 1


def test_a_key_reused_for_another_request_is_refused_with_a_stable_code(pair):
    a, b = pair
    sid = _session(a)
    key = {"Idempotency-Key": "k-1"}
    with a.client("alice") as ca, b.client("alice") as cb:
        assert (
            ca.put(f"/v1/sessions/{sid}/memories/n", json={"content": "one"}, headers=key).status_code == 200
        )
        for reuse in (
            lambda: cb.put(f"/v1/sessions/{sid}/memories/n", json={"content": "two"}, headers=key),
            lambda: cb.put(f"/v1/sessions/{sid}/memories/m", json={"content": "one"}, headers=key),
            lambda: cb.delete(f"/v1/sessions/{sid}/memories/n", headers=key),
        ):
            refused = reuse()
            assert refused.status_code == 422 and refused.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
        assert cb.get(f"/v1/sessions/{sid}/memories/n").json()["content"] == "one"


def test_keys_are_per_principal_and_checked(pair):
    a, b = pair
    alice_sid, bob_sid = _session(a, "alice"), _session(a, "bob")
    key = {"Idempotency-Key": "shared-key"}
    with a.client("alice") as alice, b.client("bob") as bob:
        mine = alice.put(f"/v1/sessions/{alice_sid}/memories/n", json={"content": "alice's"}, headers=key)
        theirs = bob.put(f"/v1/sessions/{bob_sid}/memories/n", json={"content": "bob's"}, headers=key)
        assert mine.status_code == theirs.status_code == 200
        assert "idempotent-replayed" not in theirs.headers  # bob's request ran: it is not alice's answer
        probe = bob.put(f"/v1/sessions/{alice_sid}/memories/n", json={"content": "alice's"}, headers=key)
        assert probe.status_code == 422  # bob's own key, another request: never alice's stored answer
        for bad in (b"", b"has space", b"x" * 256, "caf\u00e9".encode()):
            refused = alice.post(
                f"/v1/sessions/{alice_sid}/memories",
                json={"key": "k", "content": "c"},
                headers={"Idempotency-Key": bad},
            )
            assert refused.status_code == 400 and refused.json()["error"]["code"] == "VALIDATION_ERROR", bad
        assert alice.get(f"/v1/sessions/{alice_sid}/memories/k").status_code == 404


def test_failures_are_not_kept_so_their_retry_runs(pair):
    a, b = pair
    sid = _session(a)
    key = {"Idempotency-Key": "late-session"}
    with a.client("alice") as ca, b.client("alice") as cb:
        unauthenticated = ca.put(
            f"/v1/sessions/{sid}/memories/n",
            json={"content": "c"},
            headers={**key, "Authorization": "Bearer nope"},
        )
        assert unauthenticated.status_code == 401
        assert cb.put(f"/v1/sessions/{sid}/memories/n", json={"content": "c"}, headers=key).status_code == 200


def test_keys_expire_and_purge_removes_them(tmp_path, server_config):
    clock = FakeClock()
    path = tmp_path / "shared.db"
    with _two(path, server_config, clock) as (a, b), a.client("alice") as ca, b.client("alice") as cb:
        sid = _session(a)
        key = {"Idempotency-Key": "daily"}
        assert (
            ca.put(f"/v1/sessions/{sid}/memories/n", json={"content": "one"}, headers=key).status_code == 200
        )
        clock.advance(timedelta(hours=25).total_seconds())
        fresh = cb.put(f"/v1/sessions/{sid}/memories/n", json={"content": "two"}, headers=key)
        assert fresh.status_code == 200 and "idempotent-replayed" not in fresh.headers
        clock.advance(timedelta(hours=25).total_seconds())
        a.store.purge(before=clock())
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM server_state WHERE kind = 'idempotency'").fetchone() == (0,)


def test_the_api_description_names_the_header_on_every_write(pair):
    a, _ = pair
    with a.client() as c:
        doc = c.get("/openapi.json").json()
    writes = [
        (route, method, operation)
        for route, item in doc["paths"].items()
        for method, operation in item.items()
        if method in ("post", "put", "delete")
    ]
    assert writes
    for route, method, operation in writes:
        if route == "/v1/console/open":  # its answer is a credential: never kept, so no key
            assert "Idempotency-Key" not in [p["name"] for p in operation.get("parameters", [])]
            continue
        names = [p["name"] for p in operation.get("parameters", [])]
        assert "Idempotency-Key" in names and "422" in operation["responses"], (route, method)


def test_the_replay_window_is_the_operators_and_checked(tmp_path):
    from stratamem.server.config import parse_config

    assert parse_config("", tmp_path / "s.toml").idempotency_hours == 24
    assert parse_config("[server]\nidempotency_hours = 1.5\n", tmp_path / "s.toml").idempotency_hours == 1.5
    for bad in ("0", "-1", '"a day"', "true", "100000"):
        with pytest.raises(sm.ValidationError, match="idempotency_hours"):
            parse_config(f"[server]\nidempotency_hours = {bad}\n", tmp_path / "s.toml")
