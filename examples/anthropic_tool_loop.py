"""A whole Anthropic Messages tool loop on a stratamem session, ready to run.

    pip install stratamem anthropic
    ANTHROPIC_API_KEY=... python examples/anthropic_tool_loop.py "Remember that I prefer Python."

``run_turn`` takes the model as a function (system, messages, tools) -> a
Messages API response as a dict, so it runs against the real SDK below, or a
scripted fake in the tests.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import stratamem as sm
from stratamem import tools
from stratamem.turn import ToolCallRequest, ToolResult

Model = Callable[[str, list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]
MAX_STEPS = 8


def to_anthropic(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """(system, messages) in the Messages format: system text apart, tool results as user blocks."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "system":
            system.append(m["content"])
            continue
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)  # results of one assistant message go in one user message
            else:
                out.append({"role": "user", "content": [block]})
            continue
        if m.get("tool_calls"):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m["content"]}] if m["content"] else []
            blocks += [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": json.loads(c["arguments"])}
                for c in m["tool_calls"]
            ]
            out.append({"role": "assistant", "content": blocks})
            continue
        out.append({"role": m["role"], "content": m["content"]})
    return "\n\n".join(system), out


def run_turn(
    session: sm.Session, user_message: str, model: Model, model_name: str = "claude-sonnet-4-5"
) -> str:
    """One user turn: prompt, memory tool_use blocks through ``Turn.run_memory_tool``, usage, the answer."""
    definitions = tools.definitions(dialect="anthropic", profile="triggerfish")
    turn = session.turn(user_message, origin="interactive")
    for _ in range(MAX_STEPS):
        system, messages = to_anthropic([m.to_dict() for m in turn.messages()])
        response = model(system, messages, definitions)
        usage = response.get("usage") or {}
        turn.record_usage(model_name, usage.get("input_tokens", 0), usage.get("output_tokens", 0))
        text = "".join(b.get("text", "") for b in response["content"] if b["type"] == "text")
        uses = [b for b in response["content"] if b["type"] == "tool_use"]
        if not uses:
            turn.end(text)
            return text
        turn.record_tool_calls(
            [ToolCallRequest(u["id"], u["name"], json.dumps(u["input"])) for u in uses], text
        )
        for use in uses:
            arguments = use["input"] if isinstance(use["input"], dict) else {}
            if use["name"] in tools.TOOLS:  # stratamem's: run with the turn's origin and recorded
                turn.run_memory_tool(use["id"], use["name"], arguments)
                continue
            # not one of ours: your own tools would run here (events show the arguments' shape only)
            output = json.dumps({"error": {"code": "NOT_FOUND", "message": f"no tool {use['name']}"}})
            turn.record_tool_result(use["id"], use["name"], ToolResult(True, output), arguments=arguments)
    answer = "(stopped: too many tool calls)"
    turn.end(answer)
    return answer


def anthropic_model(model_name: str) -> Model:  # pragma: no cover - needs the SDK and a key
    try:
        import anthropic  # optional: only this runnable entry point needs the SDK
    except ImportError:
        raise SystemExit("this example needs the Anthropic SDK: pip install anthropic") from None

    client = anthropic.Anthropic()

    def call(
        system: str, messages: list[dict[str, Any]], definitions: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return client.messages.create(
            model=model_name,
            max_tokens=1024,
            system=system or anthropic.NOT_GIVEN,
            messages=messages,
            tools=definitions,
        ).model_dump()

    return call


if __name__ == "__main__":  # pragma: no cover
    session = sm.open_store().session("anthropic-example")
    print(
        run_turn(
            session,
            " ".join(sys.argv[1:]) or "What do you remember about me?",
            anthropic_model("claude-sonnet-4-5"),
        )
    )
