"""OpenAPI paths and schemas of the turn API (``rest_turns``), merged into ``openapi.document``."""

from __future__ import annotations

from typing import Any

from . import openapi_parts as o
from .rest_turns import PROMPT_QUERY, TRANSCRIPT_QUERY

MESSAGE = o.obj(
    ["role", "content"],
    role={"enum": ["system", "user", "assistant", "tool"]},
    content={"type": "string"},
    tool_calls=o.array({"type": "object"}),
    tool_call_id={"type": "string"},
    position={"type": "integer"},
    level=o.LEVEL,
)
TRIM = {
    "type": ["object", "null"],
    "properties": {
        "omitted": {"type": "boolean"},
        "omitted_range": {"type": ["array", "null"], "items": {"type": "integer"}},
        "messages_dropped": {"type": "integer"},
        "turns_dropped": {"type": "integer"},
        "tokens_before": {"type": "integer"},
        "tokens_after": {"type": "integer"},
    },
}
SCHEMAS: dict[str, Any] = {
    "TurnBegin": o.obj(
        ["user_message"],
        user_message={"type": "string"},
        origin={"enum": ["interactive", "channel", "agent", "cron", "daemon", "subturn"]},
        system_prompt={"type": "string"},
        history_budget_tokens={"type": "integer"},
    ),
    "TurnPrompt": o.obj(
        ["turn_id", "state", "messages"],
        turn_id={"type": "integer"},
        state={"type": "string"},
        messages=o.array(MESSAGE),
        trim=TRIM,
        pending_tool_calls=o.array({"type": "string"}),
    ),
    "TurnToolCalls": o.obj(
        ["tool_calls"],
        content={"type": "string"},
        tool_calls=o.array(
            o.obj(
                ["id", "name"], id={"type": "string"}, name={"type": "string"}, arguments={"type": "string"}
            )
        ),
    ),
    "TurnToolResult": o.obj(
        ["call_id", "tool_name"],
        call_id={"type": "string"},
        tool_name={"type": "string"},
        output={"type": "string"},
        success={"type": "boolean"},
        error={"type": "string"},
        duration_ms={"type": "number"},
    ),
    "TurnUsage": o.obj(
        ["model", "input_tokens", "output_tokens"],
        model={"type": "string"},
        input_tokens={"type": "integer"},
        output_tokens={"type": "integer"},
        cached_input_tokens={"type": "integer"},
        cost_usd={"type": ["string", "number"]},
    ),
    "TurnEnd": o.obj(["content"], content={"type": "string"}),
    "TurnAnswer": {"type": "object"},
    "Transcript": o.obj(
        ["messages", "start", "total"],
        messages=o.array(MESSAGE),
        start={"type": "integer"},
        total={"type": "integer"},
        next={"type": ["integer", "null"]},
    ),
}
CONFLICT = {
    "409": o.response(o.ref("Error"), "TURN_STATE: the turn has ended (or not begun)"),
    "413": o.response(o.ref("Error"), "LIMIT_EXCEEDED: a size bound of the turn"),
}
# What a runtime records during a turn: each a POST of one body to the turn, answered "Done".
RECORDS = (
    ("tool-calls", "Record the assistant's tool calls", "TurnToolCalls"),
    ("tool-results", "Record one tool result (bounded)", "TurnToolResult"),
    ("usage", "Record one model call's usage; the budget status", "TurnUsage"),
    ("end", "End the turn with the final assistant message (once)", "TurnEnd"),
)


def paths(s: str, sid: dict[str, Any]) -> dict[str, Any]:
    tid = o.path("turn_id", "The turn id returned by POST /turns (its user message's position).")
    answer = ("200", "Done", o.ref("TurnAnswer"))
    return {
        f"{s}/turns": {
            "post": o.op(
                "Begin a turn: the prompt with [Memory context] and trimming applied",
                ("201", "The prompt to send", o.ref("TurnPrompt")),
                body="TurnBegin",
                params=[sid],
                extra=CONFLICT,
            )
        },
        f"{s}/turns/{{turn_id}}/prompt": {
            "get": o.op(
                "The prompt to send now",
                ("200", "The prompt", o.ref("TurnPrompt")),
                params=[
                    sid,
                    tid,
                    o.query("system_prompt", {"type": "string"}, "Prepended, outside the budget"),
                    o.query(
                        "history_budget_tokens",
                        PROMPT_QUERY["history_budget_tokens"].schema(),
                        "At most the server's history budget",
                    ),
                ],
            )
        },
        **{
            f"{s}/turns/{{turn_id}}/{step}": {
                "post": o.op(summary, answer, body=body, params=[sid, tid], extra=CONFLICT)
            }
            for step, summary, body in RECORDS
        },
        f"{s}/transcript": {
            "get": o.op(
                "Transcript messages by range (omitted history)",
                ("200", "A page", o.ref("Transcript")),
                params=[
                    sid,
                    o.query("start", TRANSCRIPT_QUERY["start"].schema(), "First position"),
                    o.query("limit", TRANSCRIPT_QUERY["limit"].schema(), "Messages at most"),
                    o.query(
                        "transcript_id",
                        {"type": "string"},
                        "Another session this token may use (e.g. before a reset); any other id reads "
                        "as an empty transcript, exactly like one that does not exist",
                    ),
                ],
            )
        },
    }
