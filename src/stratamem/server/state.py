"""What one running server shares between requests: the store, the principals, the policy.

Every store call here is blocking (SQLite behind a lock); the HTTP and MCP
layers run them through :func:`blocking` so the event loop keeps serving
other clients while one waits for the database.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import timedelta
from typing import ParamSpec, Protocol, TypeVar

import anyio.to_thread

from ..errors import NotFound, PolicyBlocked
from ..levels import Level
from ..policy.engine import DEFAULT_POLICY, Policy
from ..session import Session
from ..store import Store
from ..tools.specs import TRIGGERFISH
from ..turn.runtime import TurnSettings
from .bindings import McpBindings
from .principals import Principal, Principals

P = ParamSpec("P")
T = TypeVar("T")

MAX_SESSION_ID_CHARS = 256


async def blocking(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a blocking store call in the worker thread pool.

    Not cancellable once started (anyio's default): a request cancelled by
    a disconnect or shutdown still lets its write finish, so nothing is half
    done and shutdown waits for it.
    """
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))


class Workers(Protocol):
    """Where a server with worker processes sends a memory tool call (``tool_workers.ToolWorkers``): a
    pickled call in, the answer's text out (``None``: an unexpected error in the worker, logged there)."""

    def call(self, message: bytes) -> str | None: ...


class ToolMetrics(Protocol):
    """Where a served tool call's latency and outcome are counted (``metrics.ServerMetrics``)."""

    def tool_call(self, tool: str, agent: str, seconds: float, answer: str | None) -> None: ...


class ServerState:
    """The store and the operator's settings, shared by every request of one server."""

    def __init__(
        self,
        store: Store,
        principals: Principals,
        *,
        profile: str = TRIGGERFISH,
        policy: Policy = DEFAULT_POLICY,
        turn_settings: TurnSettings | None = None,
        workers: Workers | None = None,
        idempotency_ttl: timedelta = timedelta(hours=24),
    ) -> None:
        self.store = store
        self.principals = principals
        self.profile = profile
        self.policy = policy
        self._read_only_policy = policy if policy.read_only else policy.replace(read_only=True)
        self.bindings = McpBindings(store)
        self.turn_settings = turn_settings or TurnSettings()  # the operator's; requests may only narrow them
        self.workers = workers  # memory tool calls run there when set (``serve --workers``)
        # how long a write's first answer is replayed (``idempotency``, ``[server] idempotency_hours``)
        self.idempotency_ttl = idempotency_ttl
        self.metrics: ToolMetrics | None = None  # set by the app that counts this server's calls

    def policy_for(self, principal: Principal) -> Policy:
        """The operator policy, read-only for read-only principals."""
        return self._read_only_policy if principal.read_only else self.policy

    # blocking: call through ``blocking`` from async code ----------------------------
    def open_session(self, principal: Principal, clearance: Level | None = None) -> Session:
        """A new session at PUBLIC for the principal's agent, peers and clearance (or a lower level), cleared
        for the principal's compartments (the operator's config, never a request's)."""
        ceiling = principal.clearance if clearance is None else clearance
        if ceiling > principal.clearance:
            raise PolicyBlocked(
                f"clearance {ceiling.name} is above this token's clearance {principal.clearance.name}"
            )
        return self.store.session(
            principal.agent,
            None,
            ceiling,
            principal.peers,
            owner=principal.name,
            compartments=principal.compartments,
        )

    def session_for(self, principal: Principal, session_id: str) -> Session:
        """An existing session the principal may act in; NOT_FOUND otherwise (never "forbidden").

        A session another principal created (``Principal.may_use``), of another
        agent, or one that reads more than the principal may, is reported
        exactly like one that does not exist.
        """
        if not isinstance(session_id, str) or not 0 < len(session_id) <= MAX_SESSION_ID_CHARS:
            raise NotFound("no such session")
        session = Session(self.store, session_id)
        try:
            record = session.record
        except NotFound:
            raise NotFound(f"no session {session_id!r}") from None
        cleared = self.store.compartments.names_of(record.clearance_code)
        if not principal.may_use(record, cleared):
            raise NotFound(f"no session {session_id!r}")
        return session
