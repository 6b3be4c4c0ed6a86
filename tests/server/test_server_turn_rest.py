"""A whole turn over HTTP only, as a runtime written in another language would run it.

The model is a scripted fake: it asks for a tool first, then answers. Nothing
here touches the store in-process except to check what the server kept.
"""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import json

from server_support import auth, server, server_config, server_store  # noqa: F401

from stratamem.turn import MemoryRecall, ToolCall, ToolCallStarted
from stratamem.turn.observe import EventLog


class ScriptedModel:
    """Asks for the weather tool once, then answers from the tool's output and the memory context."""

    def __init__(self) -> None:
        self.prompts: list[list[dict]] = []

    def __call__(self, messages: list[dict]) -> dict:
        self.prompts.append(messages)
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        tool_messages = [m for m in messages[last_user:] if m["role"] == "tool"]
        if not tool_messages:
            return {
                "tool_calls": [
                    {"id": "call-1", "name": "weather", "arguments": json.dumps({"city": "Lisbon"})}
                ]
            }
        name = "Alice" if any("Alice" in m["content"] for m in messages if m["role"] == "user") else "friend"
        return {"content": f"{tool_messages[-1]['content']}, {name}."}


def weather(arguments: str) -> str:
    return f"Sunny in {json.loads(arguments)['city']}"


def run_turn(rest, sid: str, model: ScriptedModel, user_message: str) -> dict:
    begun = rest.post(
        f"/v1/sessions/{sid}/turns",
        json={"user_message": user_message, "origin": "interactive", "system_prompt": "Be brief."},
    )
    assert begun.status_code == 201, begun.text
    turn = begun.json()
    base = f"/v1/sessions/{sid}/turns/{turn['turn_id']}"
    messages = turn["messages"]
    while True:
        reply = model(messages)
        assert (
            rest.post(
                f"{base}/usage", json={"model": "fake-1", "input_tokens": 100, "output_tokens": 10}
            ).status_code
            == 200
        )
        if "tool_calls" not in reply:
            break
        assert rest.post(f"{base}/tool-calls", json={"tool_calls": reply["tool_calls"]}).status_code == 200
        for call in reply["tool_calls"]:
            answer = rest.post(
                f"{base}/tool-results",
                json={
                    "call_id": call["id"],
                    "tool_name": call["name"],
                    "output": weather(call["arguments"]),
                    "duration_ms": 1.5,
                },
            )
            assert answer.status_code == 200, answer.text
        messages = rest.get(f"{base}/prompt", params={"system_prompt": "Be brief."}).json()["messages"]
    ended = rest.post(f"{base}/end", json={"content": reply["content"]})
    assert ended.status_code == 200 and ended.json()["state"] == "ended"
    return {"turn": turn, "final": reply["content"], "base": base}


def test_a_runtime_runs_whole_turns_over_rest_only(server):
    log = EventLog()
    server.store.events.subscribe(log)
    model = ScriptedModel()
    with server.client("alice") as rest:
        sid = rest.post("/v1/sessions").json()["id"]
        assert (
            rest.post(
                f"/v1/sessions/{sid}/memories",
                json={"key": "user_name", "content": "The user is called Alice"},
            ).status_code
            == 200
        )
        first = run_turn(rest, sid, model, "What is the weather today? Tell the user name Alice too.")
        assert first["final"] == "Sunny in Lisbon, Alice."
        begin_prompt = first["turn"]["messages"]
        assert begin_prompt[0] == {"role": "system", "content": "Be brief."}
        assert begin_prompt[-1]["content"].startswith(
            "[Memory context]\n- user_name: The user is called Alice"
        )
        # the prompt after the tool result carries the call and its answer, paired
        assert [m["role"] for m in model.prompts[-1]] == ["system", "user", "assistant", "tool"]

        # ending twice is a clear conflict, and nothing is added
        again = rest.post(f"{first['base']}/end", json={"content": "again"})
        assert again.status_code == 409 and again.json()["error"]["code"] == "TURN_STATE"
        whole = rest.get(f"/v1/sessions/{sid}/transcript").json()
        assert whole["total"] == 4 and [m["role"] for m in whole["messages"]] == [
            "user",
            "assistant",
            "tool",
            "assistant",
        ]

        # a small history budget trims; the begin answer says so and the omitted range is fetchable
        for i in range(3):
            run_turn(rest, sid, model, f"Again, weather number {i} please " + "pad " * 60)
        begun = rest.post(
            f"/v1/sessions/{sid}/turns", json={"user_message": "last one", "history_budget_tokens": 120}
        )
        trim = begun.json()["trim"]
        assert trim["omitted"] and trim["omitted_range"][0] == 0
        start, end = trim["omitted_range"]
        omitted = rest.get(
            f"/v1/sessions/{sid}/transcript", params={"start": start, "limit": end - start}
        ).json()
        assert omitted["messages"][0]["content"].startswith("What is the weather today?")
        assert begun.json()["messages"][0]["content"].startswith("[History trimmed]")

    # usage is in the store's ledger, and the path emitted the observer events
    assert len(server.store.usage()) == 8
    assert log.of_type(MemoryRecall)
    assert {e.call_id for e in log.of_type(ToolCall) if e.tool_name == "weather"} == {"call-1"}
    # the REST save: a call id of its own, shared by its start and result events
    (saved,) = [e for e in log.of_type(ToolCall) if e.tool_name == "memory_save"]
    assert saved.call_id.startswith("call_")
    assert [e.call_id for e in log.of_type(ToolCallStarted) if e.tool_name == "memory_save"] == [
        saved.call_id
    ]
    assert all(e.duration_ms == 1.5 for e in log.of_type(ToolCall) if e.tool_name == "weather")


def test_turn_endpoints_refuse_bad_input_with_stable_codes(server):
    with server.client("alice") as rest:
        sid = rest.post("/v1/sessions").json()["id"]
        assert (
            rest.post(f"/v1/sessions/{sid}/turns", json={"user_message": "hi", "origin": "webhook"}).json()[
                "error"
            ]["code"]
            == "VALIDATION_ERROR"
        )
        assert rest.post(f"/v1/sessions/{sid}/turns", json={}).status_code == 400
        turn = rest.post(f"/v1/sessions/{sid}/turns", json={"user_message": "hello there"}).json()
        base = f"/v1/sessions/{sid}/turns/{turn['turn_id']}"
        # a result for a call never made; malformed calls
        bad = rest.post(f"{base}/tool-results", json={"call_id": "nope", "tool_name": "t", "output": "x"})
        assert bad.status_code == 400
        assert (
            rest.post(f"{base}/tool-calls", json={"tool_calls": [{"id": "", "name": "t"}]}).status_code == 400
        )
        assert rest.post(f"{base}/tool-calls", json={"tool_calls": "x"}).status_code == 400
        # prices and counts that are not numbers
        for body in (
            {"model": "m", "input_tokens": -1, "output_tokens": 0},
            {"model": "m", "input_tokens": 1, "output_tokens": 1, "cost_usd": "NaN"},
            {"model": "m", "input_tokens": 1, "output_tokens": 1, "cost_usd": -3},
            {"input_tokens": 1, "output_tokens": 1},
        ):
            answer = rest.post(f"{base}/usage", json=body)
            assert answer.status_code == 400 and answer.json()["error"]["code"] == "VALIDATION_ERROR", body
        # a 10 MB tool result is accepted and bounded
        rest.post(
            f"{base}/tool-calls", json={"tool_calls": [{"id": "c1", "name": "dump", "arguments": "{}"}]}
        )
        big = rest.post(
            f"{base}/tool-results", json={"call_id": "c1", "tool_name": "dump", "output": "y" * 10_000_000}
        )
        assert (
            big.status_code == 200
            and big.json()["truncated"]
            and len(big.json()["message"]["content"]) < 60_000
        )
        # unknown turns and other principals' sessions are not found
        assert rest.get(f"/v1/sessions/{sid}/turns/999/prompt").status_code == 404
        assert rest.get(f"/v1/sessions/{sid}/turns/x/prompt").status_code == 400
        assert rest.get(f"/v1/sessions/{sid}/transcript", params={"start": "-1"}).status_code == 400
    with server.client("bob") as other:
        assert other.get(f"/v1/sessions/{sid}/transcript").status_code == 404
        assert other.post(f"{base}/end", json={"content": "x"}).status_code == 404
    assert auth("alice")


def test_openapi_documents_the_turn_routes(server):
    import httpx2

    doc = httpx2.get(f"{server.url}/openapi.json").json()
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    s = "/v1/sessions/{session_id}"
    for method, path in [
        ("POST", f"{s}/turns"),
        ("GET", f"{s}/turns/{{turn_id}}/prompt"),
        ("POST", f"{s}/turns/{{turn_id}}/tool-calls"),
        ("POST", f"{s}/turns/{{turn_id}}/tool-results"),
        ("POST", f"{s}/turns/{{turn_id}}/usage"),
        ("POST", f"{s}/turns/{{turn_id}}/end"),
        ("GET", f"{s}/transcript"),
    ]:
        assert (method, path) in documented
