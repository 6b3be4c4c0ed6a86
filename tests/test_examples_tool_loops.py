"""The tool-loop examples run end to end with scripted fake models (no SDK, no network)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import stratamem as sm
from stratamem.turn import EventLog, ToolCall, ToolCallStarted, Transcript

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def session(tmp_path):
    store = sm.open_store(str(tmp_path / "loop.db"))
    yield store.session("assistant")
    store.close()


def test_openai_function_calling_loop(session):
    example = load("openai_tool_loop")
    seen = []

    def model(messages, definitions):
        seen.append(messages)
        assert any(d["function"]["name"] == "memory_save" for d in definitions)
        if messages[-1]["role"] == "user":
            arguments = json.dumps({"key": "lang", "content": "prefers Python"})
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "memory_save", "arguments": arguments},
            }
            return {
                "choices": [{"message": {"content": None, "tool_calls": [call]}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5},
            }
        assert messages[-1]["role"] == "tool" and json.loads(messages[-1]["content"])["saved"] is True
        assert messages[-2]["tool_calls"][0]["function"]["name"] == "memory_save"
        return {
            "choices": [{"message": {"content": "Noted: Python."}}],
            "usage": {"prompt_tokens": 80, "completion_tokens": 4},
        }

    log = EventLog()
    session.store.events.subscribe(log)
    assert example.run_turn(session, "Remember that I prefer Python.", model) == "Noted: Python."
    # the memory tool ran as one start/result pair, and no event shows what it stored
    calls = [(type(e).__name__, e.call_id) for e in log.events if isinstance(e, ToolCall | ToolCallStarted)]
    assert calls == [("ToolCallStarted", "call_1"), ("ToolCall", "call_1")]
    assert all("prefers Python" not in repr(e) for e in log.events)
    assert session.get("lang").content == "prefers Python" and len(seen) == 2
    roles = [m.message.role for m in Transcript(session).page(0, 20)[0]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    # the next turn recalls it into the prompt
    example.run_turn(
        session,
        "Which language do I prefer?",
        lambda messages, _: {
            "choices": [
                {
                    "message": {
                        "content": "Python"
                        if any("prefers Python" in (m["content"] or "") for m in messages)
                        else "?"
                    }
                }
            ]
        },
    )
    assert [m.message.content for m in Transcript(session).page(0, 20)[0]][-1] == "Python"


def test_anthropic_messages_loop(session):
    example = load("anthropic_tool_loop")
    session.save("city", "The user lives in Lisbon")

    def model(system, messages, definitions):
        assert any(d["name"] == "memory_search" for d in definitions)
        last = messages[-1]
        if last["role"] == "user" and isinstance(last["content"], str):
            return {
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "memory_search",
                        "input": {"query": "Lisbon"},
                    },
                    {"type": "tool_use", "id": "toolu_2", "name": "not_ours", "input": {}},
                ],
                "usage": {"input_tokens": 40, "output_tokens": 9},
            }
        results = last["content"]
        assert [b["tool_use_id"] for b in results] == ["toolu_1", "toolu_2"]
        assert "Lisbon" in results[0]["content"] and "NOT_FOUND" in results[1]["content"]
        assert messages[-2]["content"][1]["type"] == "tool_use"
        return {
            "content": [{"type": "text", "text": "You live in Lisbon."}],
            "usage": {"input_tokens": 60, "output_tokens": 6},
        }

    log = EventLog()
    session.store.events.subscribe(log)
    assert example.run_turn(session, "Where do I live?", model) == "You live in Lisbon."
    ended = [e for e in log.events if isinstance(e, ToolCall)]
    assert [(e.tool_name, e.call_id) for e in ended] == [
        ("memory_search", "toolu_1"),
        ("not_ours", "toolu_2"),
    ]
    assert len(log.of_type(ToolCallStarted)) == 2
    assert sum(u.input_tokens for u in session.store.usage()) == 100


def test_a_loop_that_never_answers_stops(session):
    example = load("anthropic_tool_loop")
    forever = {"content": [{"type": "tool_use", "id": "t", "name": "memory_list", "input": {}}]}
    calls = iter(range(100))

    def model(system, messages, definitions):
        n = next(calls)
        return {"content": [{**forever["content"][0], "id": f"t{n}"}]}

    assert example.run_turn(session, "loop", model).startswith("(stopped")


@pytest.mark.parametrize(
    ("name", "sdk"), [("openai_tool_loop", "openai"), ("anthropic_tool_loop", "anthropic")]
)
def test_running_an_example_without_its_sdk_says_what_to_install(tmp_path, name, sdk):
    import os
    import subprocess
    import sys

    blocked = f"import runpy, sys; sys.modules[{sdk!r}] = None; runpy.run_path({str(EXAMPLES / f'{name}.py')!r}, run_name='__main__')"
    env = {**os.environ, "STRATAMEM_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"pip install {sdk}" in done.stderr
