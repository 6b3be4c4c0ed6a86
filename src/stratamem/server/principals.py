"""Who may call the server: API tokens mapped to an agent, a clearance (a level and the compartments its
sessions may enter) and peers.

A principal is the operator's word on what one token may do. The server
never lets a request choose its agent, clearance or peers: they come from the
principal the token resolves to, so a token can never act as another agent or
above its clearance.

Tokens are kept as SHA-256 hex digests and compared with
``hmac.compare_digest`` against every known digest (no early exit), so neither
the config file nor the comparison time gives a token away.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..errors import ValidationError
from ..levels import Level
from ..storage.records import SessionRecord


def token_digest(token: str) -> str:
    """The SHA-256 hex digest a config file stores instead of the token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh random API token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class Principal:
    """One token's rights: the agent it acts as, its clearance ceiling and readable peers."""

    name: str
    agent: str
    clearance: Level
    peers: tuple[str, ...] = ()
    compartments: frozenset[str] = frozenset()  # of its clearance: what its sessions may ``enter``
    read_only: bool = False
    operator: bool = False  # may use any session of its agent and read every agent's audit events
    token_sha256: str = field(default="", repr=False)

    def may_use(self, record: SessionRecord, compartments: frozenset[str] | None = None) -> bool:
        """Whether this principal may act in an existing session.

        The session must be one this principal created (operators may use any:
        also those the operator's own tools created, which have no owner), for
        the principal's own agent, and must not read more than the principal
        could: its clearance no higher (``compartments``: the names of the
        session's cleared compartments, each one the principal's too; not
        given, a session cleared for any compartment is refused) and its
        peers a subset of the principal's. Anything else is answered as NOT_FOUND, exactly like a
        session that does not exist — another token of the same agent can
        neither act in nor learn of it.
        """
        return (
            (self.operator or record.owner == self.name)
            and record.agent_id == self.agent
            and record.clearance <= self.clearance
            and (record.clearance_code < 4 if compartments is None else compartments <= self.compartments)
            and set(record.peers) <= set(self.peers)
        )


class Principals:
    """The token table of one server."""

    def __init__(self, principals: Iterable[Principal]) -> None:
        self._all = tuple(principals)
        if not self._all:
            raise ValidationError("the server needs at least one principal")
        names = [p.name for p in self._all]
        if len(set(names)) != len(names):
            raise ValidationError("principal names must be unique")
        digests = [p.token_sha256 for p in self._all]
        if len(set(digests)) != len(digests):
            raise ValidationError("two principals share one token")

    def __iter__(self) -> Iterator[Principal]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def authenticate(self, token: str | None) -> Principal | None:
        """The principal a bearer token belongs to, or ``None``; constant time over the table."""
        if not token:
            return None
        presented = token_digest(token)
        match: Principal | None = None
        for principal in self._all:
            if hmac.compare_digest(presented, principal.token_sha256):
                match = principal
        return match
