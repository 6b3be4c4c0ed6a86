"""Which stratamem session each stateful MCP-over-HTTP session acts in.

An MCP client that uses the initialize handshake gets an ``mcp-session-id``;
the server binds it to one stratamem session owned by the same principal, so
the taint the runtime raises (``POST /v1/sessions/{id}/escalate``) holds for
every later tool call of that connection. Bindings live in memory only: an
MCP session does not survive a restart either. The table is bounded (least
recently used dropped first) so abandoned connections cannot grow it forever.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

DEFAULT_MAX_BINDINGS = 10_000  # the SDK's default cap on open MCP sessions


@dataclass(frozen=True, slots=True)
class Binding:
    principal: str
    session_id: str


class McpBindings:
    """mcp-session-id -> (principal name, stratamem session id). Used from the event loop only."""

    def __init__(self, max_entries: int = DEFAULT_MAX_BINDINGS) -> None:
        self._entries: OrderedDict[str, Binding] = OrderedDict()
        self._max = max_entries

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, mcp_session_id: str, principal: str) -> Binding | None:
        """The binding, only for the principal that created it (anyone else sees none)."""
        binding = self._entries.get(mcp_session_id)
        if binding is None or binding.principal != principal:
            return None
        self._entries.move_to_end(mcp_session_id)
        return binding

    def owned_by_other(self, mcp_session_id: str, principal: str) -> bool:
        binding = self._entries.get(mcp_session_id)
        return binding is not None and binding.principal != principal

    def bind(self, mcp_session_id: str, principal: str, session_id: str) -> Binding:
        binding = Binding(principal, session_id)
        self._entries[mcp_session_id] = binding
        self._entries.move_to_end(mcp_session_id)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return binding

    def drop(self, mcp_session_id: str) -> None:
        self._entries.pop(mcp_session_id, None)
