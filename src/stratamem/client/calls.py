"""The HTTP API's operations as plain request descriptions, shared by the sync and async clients.

Each function here states one operation once — its arguments, its route and
its body — and returns a :class:`Call`; ``Client`` and ``AsyncClient`` only
send it. Answers are the server's JSON shapes (the same as the tools'), so a
program can move between in-process ``tools.execute``, REST and this client
without translating.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    #: ``memory_get`` answers ``{"found": false}`` with 404; the client returns None for it
    none_when_not_found: bool = False


def _seg(value: object) -> str:
    """One path segment: every reserved character escaped (keys may hold / ? # %)."""
    return quote(str(value), safe="")


def _session(session_id: str) -> str:
    return f"/v1/sessions/{_seg(session_id)}"


def _turn(session_id: str, turn_id: int | str) -> str:
    return f"{_session(session_id)}/turns/{_seg(turn_id)}"


def _given(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


# health and tools ---------------------------------------------------------------------------
def health() -> Call:
    """Liveness and storage readiness: ``{"status": "ok", "version": ...}``."""
    return Call("GET", "/v1/health")


def tools(dialect: str = "openai", profile: str | None = None) -> Call:
    """Tool definitions for a model provider, as this token would be offered them."""
    return Call("GET", "/v1/tools", _given(dialect=dialect, profile=profile))


# sessions -----------------------------------------------------------------------------------
def create_session(clearance: str | None = None) -> Call:
    """A new session of this token's agent (at most its clearance); the session shape with its ``id``."""
    return Call("POST", "/v1/sessions", body=_given(clearance=clearance))


def get_session(session_id: str) -> Call:
    """The session's agent, taint, clearance, peers and taint history."""
    return Call("GET", _session(session_id))


def escalate(session_id: str, level: str, reason: str | None = None) -> Call:
    """Raise the session's taint (the runtime's move, never the model's); refused above its clearance."""
    return Call("POST", f"{_session(session_id)}/escalate", body=_given(level=level, reason=reason))


def enter(session_id: str, compartment: str, reason: str | None = None) -> Call:
    """Enter a compartment the session is cleared for (its taint gains it; refused as a level above the
    clearance is, when the clearance lacks it)."""
    return Call("POST", f"{_session(session_id)}/enter", body=_given(compartment=compartment, reason=reason))


def reset(session_id: str) -> Call:
    """A fresh PUBLIC session for the same agent (the old one keeps its taint)."""
    return Call("POST", f"{_session(session_id)}/reset", body={})


# memories -----------------------------------------------------------------------------------
def _when(moment: datetime | str | None) -> str | None:
    """A time as the server reads it: ISO 8601 text (a datetime is sent with its offset)."""
    return moment.isoformat() if isinstance(moment, datetime) else moment


def save(
    session_id: str,
    key: str,
    content: str,
    *,
    tags: Iterable[str] | None = None,
    category: str | None = None,
    occurred_at: datetime | str | None = None,
    context: str | None = None,
) -> Call:
    """Save at the session's taint: ``{"saved": true, "key", "classification"}``; ``occurred_at``: when it
    happened (default: now), ``context``: text that situates it (stored, never returned)."""
    body = _given(
        key=key, content=content, category=category, occurred_at=_when(occurred_at), context=context
    )
    if tags is not None:
        body["tags"] = list(tags)
    return Call("POST", f"{_session(session_id)}/memories", body=body)


def save_many(session_id: str, items: Iterable[Mapping[str, Any]]) -> Call:
    """Several memories in one transaction, all or nothing: ``{"saved": N, "memories": [...]}``; an item
    may carry ``occurred_at`` (a datetime or ISO 8601 text) and ``context`` as ``save`` does."""
    body = [{**i, "occurred_at": _when(i["occurred_at"])} if "occurred_at" in i else dict(i) for i in items]
    return Call("POST", f"{_session(session_id)}/memories:batch", body={"items": body})


def get(session_id: str, key: str) -> Call:
    """The visible version of ``key`` (the ``memory_get`` shape), or None when nothing visible has it."""
    return Call("GET", f"{_session(session_id)}/memories/{_seg(key)}", none_when_not_found=True)


def list_memories(
    session_id: str,
    *,
    tag: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    occurred_since: datetime | str | None = None,
    occurred_until: datetime | str | None = None,
) -> Call:
    """One page: ``{"memories": [...], "next_cursor": ...}``; pass next_cursor back for the next page.
    ``occurred_since``/``occurred_until``: only memories that happened in that range (inclusive)."""
    query = _given(
        tag=tag,
        limit=limit,
        cursor=cursor,
        occurred_since=_when(occurred_since),
        occurred_until=_when(occurred_until),
    )
    return Call("GET", f"{_session(session_id)}/memories", query)


def delete(session_id: str, key: str) -> Call:
    """Soft-delete the own agent's ``key`` at exactly the session's taint."""
    return Call("DELETE", f"{_session(session_id)}/memories/{_seg(key)}")


def search(session_id: str, query: str, max_results: int | None = None, cursor: str | None = None) -> Call:
    """Ranked visible memories: ``{"query", "results": [...]}``; an answer cut to the server's size limit
    adds ``"truncated": true`` and a ``next_cursor`` to pass back with the same query."""
    body = _given(query=query, max_results=max_results, cursor=cursor)
    return Call("POST", f"{_session(session_id)}/search", body=body)


# audit --------------------------------------------------------------------------------------
def audit(
    *,
    limit: int | None = None,
    after: int | None = None,
    before: int | None = None,
    lineage: str | None = None,
) -> Call:
    """A bounded page of the events this token could have observed (``more``, ``next_before``/``next_after``)."""
    return Call("GET", "/v1/audit", _given(limit=limit, after=after, before=before, lineage=lineage))


def audit_verify() -> Call:
    """``{"intact": true}``, or ``{"intact": false, "first_bad_seq": N}``."""
    return Call("GET", "/v1/audit/verify")


# turns --------------------------------------------------------------------------------------
def begin_turn(
    session_id: str,
    user_message: str,
    *,
    system_prompt: str | None = None,
    history_budget_tokens: int | None = None,
    origin: str | None = None,
) -> Call:
    """Record the user message, recall through the policy, trim: the prompt to send (with ``turn_id``)."""
    return Call(
        "POST",
        f"{_session(session_id)}/turns",
        body=_given(
            user_message=user_message,
            system_prompt=system_prompt,
            history_budget_tokens=history_budget_tokens,
            origin=origin,
        ),
    )


def prompt(
    session_id: str,
    turn_id: int | str,
    *,
    system_prompt: str | None = None,
    history_budget_tokens: int | None = None,
) -> Call:
    """The turn's current messages (after tool results), ready for the next model call."""
    return Call(
        "GET",
        f"{_turn(session_id, turn_id)}/prompt",
        _given(system_prompt=system_prompt, history_budget_tokens=history_budget_tokens),
    )


def tool_calls(
    session_id: str, turn_id: int | str, calls: Iterable[Mapping[str, Any]], content: str = ""
) -> Call:
    """Record the model's tool calls (each ``{id, name, arguments}``) and any text it said with them."""
    return Call(
        "POST",
        f"{_turn(session_id, turn_id)}/tool-calls",
        body={"tool_calls": [dict(c) for c in calls], "content": content},
    )


def tool_result(
    session_id: str,
    turn_id: int | str,
    call_id: str,
    tool_name: str,
    output: str = "",
    *,
    error: str | None = None,
    success: bool | None = None,
    arguments: Any = None,
    duration_ms: float | None = None,
) -> Call:
    """Record one tool call's result (scrubbed and bounded by the server)."""
    return Call(
        "POST",
        f"{_turn(session_id, turn_id)}/tool-results",
        body=_given(
            call_id=call_id,
            tool_name=tool_name,
            output=output,
            error=error,
            success=success,
            arguments=arguments,
            duration_ms=duration_ms,
        ),
    )


def usage(
    session_id: str,
    turn_id: int | str,
    model: str,
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int = 0,
    cost_usd: float | None = None,
) -> Call:
    """Record the model call's token usage; the answer carries the budget state."""
    return Call(
        "POST",
        f"{_turn(session_id, turn_id)}/usage",
        body=_given(
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_input_tokens=cached_input_tokens,
            cost_usd=cost_usd,
        ),
    )


def end_turn(session_id: str, turn_id: int | str, content: str) -> Call:
    """Record the final assistant message and close the turn."""
    return Call("POST", f"{_turn(session_id, turn_id)}/end", body={"content": content})


def transcript(
    session_id: str, *, start: int = 0, limit: int = 100, transcript_id: str | None = None
) -> Call:
    """A range of the transcript as the session may see it: ``messages``, ``total``, ``next``."""
    return Call(
        "GET",
        f"{_session(session_id)}/transcript",
        _given(start=start, limit=limit, transcript_id=transcript_id),
    )


#: every operation, by the name both clients give it
OPERATIONS = {
    f.__name__: f
    for f in (
        health,
        tools,
        create_session,
        get_session,
        escalate,
        enter,
        reset,
        save,
        save_many,
        get,
        list_memories,
        delete,
        search,
        audit,
        audit_verify,
        begin_turn,
        prompt,
        tool_calls,
        tool_result,
        usage,
        end_turn,
        transcript,
    )
}
