"""A whole turn for runtimes in any language: the operations REST and MCP both serve.

Each operation is blocking (call it through ``state.blocking``), takes the
caller's principal, a session id the principal owns (``state.session_for``:
another principal's session is NOT_FOUND) and a decoded JSON object, and
returns a JSON-ready dict. Nothing is kept between requests: a turn is found
again by its id (the position of its user message) with ``Turn.resume``, so
any worker of any process can serve the next call, and a turn ends at most
once. Not even a rendered memory block is kept: each prompt recalls anew
(``Turn.messages``), so a memory deleted, purged or expired since — by any
process, the CLI's ``purge`` and the console included — is never served again.

Turn settings — everything ``TurnSettings`` holds: history budget and window,
recall, autosave, tool-result limits, prices and spending budget — are the
operator's (``[turns]``, ``server/turn_config.py``, as ``ServerState.turn_settings``);
a request may only choose the origin, a system prompt, and a smaller history budget.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import NotFound, ValidationError
from ..session import Session
from ..turn import Message, ToolCallRequest, ToolResult, Transcript, Turn, TurnSettings
from ..turn.costs import BudgetReport
from .principals import Principal

if TYPE_CHECKING:
    from ..policy.engine import Policy


class TurnState(Protocol):
    """What the turn operations need of a server: ``ServerState``, or stdio's one session (``mcp_turns``)."""

    def session_for(self, principal: Principal, session_id: str) -> Session: ...
    def policy_for(self, principal: Principal) -> Policy: ...


MAX_SYSTEM_PROMPT_CHARS = 100_000
MAX_OUTPUT_CHARS = (
    16 * 1024 * 1024
)  # larger tool output is refused; anything below is truncated to the limits


class TurnOps:
    """The operations of the turn API for one server."""

    def __init__(self, state: TurnState, settings: TurnSettings | None = None) -> None:
        self.state = state
        self.settings = settings or TurnSettings()

    # ------------------------------------------------------------------ plumbing

    def _session(self, principal: Principal, session_id: str) -> Session:
        return self.state.session_for(principal, session_id)

    def _usable(self, principal: Principal, session_id: object) -> bool:
        """Whether a session id another part of the request names is one the principal may use."""
        if not isinstance(session_id, str):
            return False  # not an id at all: the transcript read refuses it as such
        try:
            self.state.session_for(principal, session_id)
        except NotFound:
            return False
        return True

    def _turn(self, principal: Principal, session_id: str, turn_id: object, body: dict[str, Any]) -> Turn:
        return Turn.resume(
            self._session(principal, session_id),
            _int(turn_id, "turn_id"),
            **self._options(principal, body, origin=False),
        )

    def _options(self, principal: Principal, body: dict[str, Any], *, origin: bool) -> dict[str, Any]:
        settings = self.settings
        if body.get("history_budget_tokens") is not None:
            budget = _int(body["history_budget_tokens"], "history_budget_tokens")
            settings = replace(settings, history_budget_tokens=min(budget, settings.history_budget_tokens))
        system = body.get("system_prompt")
        if system is not None and (not isinstance(system, str) or len(system) > MAX_SYSTEM_PROMPT_CHARS):
            raise ValidationError(
                f"system_prompt must be a string of at most {MAX_SYSTEM_PROMPT_CHARS} characters"
            )
        options: dict[str, Any] = {
            "settings": settings,
            "system_prompt": system,
            "policy": self.state.policy_for(principal),
        }
        if origin:
            options["origin"] = body.get("origin", "interactive")
        return options

    @staticmethod
    def _prompt(turn: Turn, prompt: list[Message] | None = None) -> dict[str, Any]:
        messages = [m.to_dict() for m in (turn.messages() if prompt is None else prompt)]
        trim = turn.last_trim.to_dict() if turn.last_trim else None
        return {
            "turn_id": turn.id,
            "state": turn.state,
            "messages": messages,
            "trim": trim,
            "pending_tool_calls": sorted(turn.pending_calls),
        }

    # ------------------------------------------------------------------ operations

    def begin(self, principal: Principal, session_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Record the user message, recall through the policy, trim; the prompt to send."""
        message = body.get("user_message")
        if not isinstance(message, str):
            raise ValidationError("user_message is required (a string)")
        options = self._options(principal, body, origin=True)
        turn = Turn(self._session(principal, session_id), options.pop("origin"), **options)
        return self._prompt(turn, turn.begin(message))

    def prompt(
        self, principal: Principal, session_id: str, turn_id: object, body: dict[str, Any]
    ) -> dict[str, Any]:
        return self._prompt(self._turn(principal, session_id, turn_id, body))

    def tool_calls(
        self, principal: Principal, session_id: str, turn_id: object, body: dict[str, Any]
    ) -> dict[str, Any]:
        calls = body.get("tool_calls")
        if not isinstance(calls, list) or not calls:
            raise ValidationError("tool_calls must be a non-empty list of {id, name, arguments}")
        if not all(isinstance(c, dict) for c in calls):
            raise ValidationError("each tool call must be an object {id, name, arguments}")
        requests = [ToolCallRequest.from_dict(c) for c in calls]
        content = body.get("content") or ""
        if not isinstance(content, str):
            raise ValidationError("content must be a string")
        turn = self._turn(principal, session_id, turn_id, {})
        turn.record_tool_calls(requests, content)
        return {"turn_id": turn.id, "pending_tool_calls": sorted(turn.pending_calls)}

    def tool_result(
        self, principal: Principal, session_id: str, turn_id: object, body: dict[str, Any]
    ) -> dict[str, Any]:
        call_id, name = body.get("call_id"), body.get("tool_name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise ValidationError("call_id and tool_name are required (strings)")
        output, error = body.get("output", ""), body.get("error")
        if not isinstance(output, str) or (error is not None and not isinstance(error, str)):
            raise ValidationError("output and error must be strings")
        if len(output) > MAX_OUTPUT_CHARS:
            raise ValidationError(f"output is larger than {MAX_OUTPUT_CHARS} characters")
        success = body.get("success", error is None)
        if not isinstance(success, bool):
            raise ValidationError("success must be a boolean")
        duration = body.get("duration_ms", 0)
        if isinstance(duration, bool) or not isinstance(duration, int | float) or not 0 <= duration < 1e12:
            raise ValidationError("duration_ms must be a number >= 0")
        turn = self._turn(principal, session_id, turn_id, {})
        message = turn.record_tool_result(
            call_id,
            name,
            ToolResult(success, output, error),
            arguments=body.get("arguments", "{}") if isinstance(body.get("arguments"), str | dict) else "{}",
            duration_ms=float(duration),
        )
        return {
            "turn_id": turn.id,
            "message": message.to_dict(),
            "truncated": len(message.content) < len(output),
            "pending_tool_calls": sorted(turn.pending_calls),
        }

    def usage(
        self, principal: Principal, session_id: str, turn_id: object, body: dict[str, Any]
    ) -> dict[str, Any]:
        turn = self._turn(principal, session_id, turn_id, {})
        # record_usage validates every field of the request body (a clear error, never a crash)
        report = turn.record_usage(
            body.get("model"),  # type: ignore[arg-type]
            body.get("input_tokens"),  # type: ignore[arg-type]
            body.get("output_tokens"),  # type: ignore[arg-type]
            body.get("cached_input_tokens", 0),
            cost_usd=body.get("cost_usd"),
        )
        usage = report.record.to_dict()
        usage.pop("record")
        return {"turn_id": turn.id, "usage": usage, "budget": _budget(report.budget)}

    def end(
        self, principal: Principal, session_id: str, turn_id: object, body: dict[str, Any]
    ) -> dict[str, Any]:
        content = body.get("content")
        if not isinstance(content, str):
            raise ValidationError("content is required (the final assistant message)")
        turn = self._turn(principal, session_id, turn_id, {})
        turn.end(content)
        return {"turn_id": turn.id, "state": turn.state}

    def transcript(self, principal: Principal, session_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """A range of a transcript (default: the session's own), as the session may see it.

        A transcript is its session's: ``transcript_id`` passes the same
        ownership rule as the path's session (``session_for``), and one the
        principal may not use reads exactly as one that does not exist.
        """
        start = _int(body.get("start", 0), "start")
        limit = _int(body.get("limit", 100), "limit")
        session = self._session(principal, session_id)
        transcript_id = body.get("transcript_id")
        named = transcript_id is None or self._usable(principal, transcript_id)
        rows, total = Transcript(session).page(start, max(1, limit), transcript_id, named=named)
        end = start + len(rows)
        return {
            "messages": [r.to_dict() for r in rows],
            "start": start,
            "total": total,
            "next": end if end < total else None,
        }


def _int(value: object, name: str) -> int:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 19:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**62:
        raise ValidationError(f"{name} must be an integer >= 0")
    return value


def _budget(report: BudgetReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    limits = report.budget
    return {
        "status": report.status.value,
        "daily_status": report.daily_status.value,
        "monthly_status": report.monthly_status.value,
        "daily_spent_usd": str(report.daily_spent),
        "monthly_spent_usd": str(report.monthly_spent),
        "daily_limit_usd": None if limits.daily_usd is None else str(limits.daily_usd),
        "monthly_limit_usd": None if limits.monthly_usd is None else str(limits.monthly_usd),
    }
