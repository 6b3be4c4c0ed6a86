"""Which stratamem session each stateful MCP-over-HTTP session acts in, kept in the store.

An MCP client that uses the initialize handshake gets an ``mcp-session-id``;
the server binds it to one stratamem session owned by the same principal, so
the taint the runtime raises (``POST /v1/sessions/{id}/escalate``) holds for
every later tool call of that connection. The binding is in the store
(``storage/server_state.py``), so ``GET /v1/mcp-sessions/{id}`` and a tool call
answer the same on every server of one database. The MCP SDK itself keeps a
stateful connection in the memory of the server that opened it: a load
balancer sends one ``mcp-session-id`` to one server (docs/guides/scaling.md),
or clients use the stateless per-request protocol.

The id is stored hashed; a binding lives ``ttl`` after it was last refreshed
(it is refreshed when half of that has passed), so abandoned connections leave
nothing behind past a ``purge``. Every method is blocking (``state.blocking``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

from ..storage import server_state
from ..storage.sql.rows import to_us
from ..store import Store

DEFAULT_TTL = timedelta(days=1)
KIND = "mcp"


@dataclass(frozen=True, slots=True)
class Binding:
    principal: str
    session_id: str


class McpBindings:
    """mcp-session-id -> (principal name, stratamem session id), on the store every server shares."""

    def __init__(self, store: Store, ttl: timedelta = DEFAULT_TTL) -> None:
        self.store = store
        self.ttl = ttl

    def find(self, mcp_session_id: str) -> Binding | None:
        """The binding whoever owns it (callers compare ``principal``), or None."""
        now = self.store.now()
        key = server_state.digest(KIND, mcp_session_id)
        entry = server_state.get(self.store.backend, KIND, key, now)
        if entry is None:
            return None
        binding = Binding(entry.principal, json.loads(entry.payload)["session"])
        if entry.expires_us - to_us(now) < self.ttl / timedelta(microseconds=1) / 2:
            self._store(key, binding)  # in use: kept for another ``ttl``
        return binding

    def _store(self, key: str, binding: Binding) -> None:
        now = self.store.now()
        entry = server_state.Entry(
            binding.principal, json.dumps({"session": binding.session_id}), to_us(now + self.ttl)
        )
        server_state.put(self.store.backend, KIND, key, entry, now)

    def get(self, mcp_session_id: str, principal: str) -> Binding | None:
        """The binding, only for the principal that created it (anyone else sees none)."""
        binding = self.find(mcp_session_id)
        return binding if binding is not None and binding.principal == principal else None

    def bind(self, mcp_session_id: str, principal: str, session_id: str) -> Binding:
        binding = Binding(principal, session_id)
        self._store(server_state.digest(KIND, mcp_session_id), binding)
        return binding

    def drop(self, mcp_session_id: str) -> None:
        now = self.store.now()
        server_state.drop(self.store.backend, KIND, server_state.digest(KIND, mcp_session_id), now)
