"""A whole OpenAI function-calling tool loop on a stratamem session, ready to run.

    pip install stratamem openai
    OPENAI_API_KEY=... python examples/openai_tool_loop.py "Remember that I prefer Python."

The loop is the same for any chat-completions model: ``run_turn`` takes the
model as a function (messages, tools) -> a chat completion as a dict, so it
runs against the real SDK below, or a scripted fake in the tests.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import stratamem as sm
from stratamem import tools
from stratamem.turn import ToolCallRequest, ToolResult

Model = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]
MAX_STEPS = 8  # model calls per turn: a loop that never answers stops here


def to_openai(message: dict[str, Any]) -> dict[str, Any]:
    """A stratamem prompt message in the chat-completions format."""
    out: dict[str, Any] = {"role": message["role"], "content": message["content"]}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in message["tool_calls"]
        ]
    if message.get("tool_call_id"):
        out["tool_call_id"] = message["tool_call_id"]
    return out


def run_turn(session: sm.Session, user_message: str, model: Model, model_name: str = "gpt-4o-mini") -> str:
    """One user turn: prompt, memory tool calls through ``Turn.run_memory_tool``, usage, the final answer."""
    definitions = tools.definitions(dialect="openai", profile="triggerfish")
    turn = session.turn(user_message, origin="interactive")
    for _ in range(MAX_STEPS):
        completion = model([to_openai(m.to_dict()) for m in turn.messages()], definitions)
        usage = completion.get("usage") or {}
        turn.record_usage(model_name, usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
        message = completion["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        if not calls:
            answer = message.get("content") or ""
            turn.end(answer)
            return answer
        turn.record_tool_calls(
            [ToolCallRequest(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls],
            message.get("content") or "",
        )
        for call in calls:
            name = call["function"]["name"]
            if name in tools.TOOLS:  # stratamem's: run with the turn's origin and recorded (one event pair)
                try:
                    arguments = json.loads(call["function"]["arguments"] or "{}")
                except ValueError:
                    arguments = None
                turn.run_memory_tool(call["id"], name, arguments if isinstance(arguments, dict) else {})
                continue
            # not one of ours: your own tools would run here (events show the arguments' shape only)
            output = json.dumps({"error": {"code": "NOT_FOUND", "message": f"no tool {name}"}})
            turn.record_tool_result(
                call["id"], name, ToolResult(True, output), arguments=call["function"]["arguments"]
            )
    answer = "(stopped: too many tool calls)"
    turn.end(answer)
    return answer


def openai_model(model_name: str) -> Model:  # pragma: no cover - needs the SDK and a key
    try:
        from openai import OpenAI  # optional: only this runnable entry point needs the SDK
    except ImportError:
        raise SystemExit("this example needs the OpenAI SDK: pip install openai") from None

    client = OpenAI()

    def call(messages: list[dict[str, Any]], definitions: list[dict[str, Any]]) -> dict[str, Any]:
        return client.chat.completions.create(
            model=model_name, messages=messages, tools=definitions
        ).model_dump()

    return call


if __name__ == "__main__":  # pragma: no cover
    session = sm.open_store().session("openai-example")
    print(
        run_turn(
            session, " ".join(sys.argv[1:]) or "What do you remember about me?", openai_model("gpt-4o-mini")
        )
    )
