"""Where a turn came from, and what that lets recall put into its prompt.

A person's own conversation is context for that person's next message, and
for nothing else. A turn no person started — another agent's request, a
scheduled job, a background task — recalls no conversation memories: its
"user" text is a prompt template, and the chat it would be shown is somebody
else's conversation with the agent. Subturns inherit their parent's context
and are given none of their own. ``RECALL`` below is the one table of that
rule; ``recall.recall_block`` reads it for the search and the filter alike,
and ``docs/turns.md`` shows it as rendered by :func:`origin_table`
(``tests/turn/test_turn_origins.py`` keeps both the same as the code):

| origin | started by | `[Memory context]` | conversation memories recalled | memory tools read conversation memories | autosaved by default |
|---|---|---|---|---|---|
| `interactive` | a person, typing | yes | this session's | this session's | yes |
| `channel` | a person, through a channel (chat app, e-mail, ...) | yes | this session's | this session's | yes |
| `agent` | another agent | yes | none | this session's | no |
| `cron` | a schedule | yes | none | none | no |
| `daemon` | a background task | yes | none | none | no |
| `subturn` | a parent turn | no (inherits the parent's) | none | none | no |

"this session's" needs a session scope: a stand-in session without one
(``render_memory_context`` with no ``session_scopes``) recalls none. Memory
tools called in a turn read under the store's conversation scope
(``stratamem.scope``), which hides conversations from autonomous origins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from ..scope import NONE, OWN, Conversations, for_origin
from .errors import ValidationError

__all__ = [
    "AUTOSAVED_BY_DEFAULT",
    "RECALL",
    "STARTED_BY",
    "Origin",
    "RecallPolicy",
    "origin_table",
    "parse_origin",
    "recall_policy",
]


class Origin(StrEnum):
    """Where a turn came from; decides how much recalled memory it may see."""

    INTERACTIVE = "interactive"
    CHANNEL = "channel"
    AGENT = "agent"
    CRON = "cron"
    DAEMON = "daemon"
    SUBTURN = "subturn"


@dataclass(frozen=True, slots=True)
class RecallPolicy:
    """What recall includes for one turn: a block at all, and conversation memories in it."""

    inject: bool
    include_conversation: bool

    @property
    def conversations(self) -> Conversations:
        """The store's conversation scope for the recall search (``stratamem.scope``)."""
        return OWN if self.include_conversation else NONE


STARTED_BY: dict[Origin, str] = {
    Origin.INTERACTIVE: "a person, typing",
    Origin.CHANNEL: "a person, through a channel (chat app, e-mail, ...)",
    Origin.AGENT: "another agent",
    Origin.CRON: "a schedule",
    Origin.DAEMON: "a background task",
    Origin.SUBTURN: "a parent turn",
}

# The rule: only turns a person started recall conversation memories (given a session scope).
RECALL: dict[Origin, RecallPolicy] = {
    Origin.INTERACTIVE: RecallPolicy(inject=True, include_conversation=True),
    Origin.CHANNEL: RecallPolicy(inject=True, include_conversation=True),
    Origin.AGENT: RecallPolicy(inject=True, include_conversation=False),
    Origin.CRON: RecallPolicy(inject=True, include_conversation=False),
    Origin.DAEMON: RecallPolicy(inject=True, include_conversation=False),
    Origin.SUBTURN: RecallPolicy(inject=False, include_conversation=False),
}

_SILENT = RecallPolicy(inject=False, include_conversation=False)

# What ``AutosavePolicy`` saves unless told otherwise: what a person wrote, never a prompt template.
AUTOSAVED_BY_DEFAULT: frozenset[str] = frozenset({Origin.INTERACTIVE.value, Origin.CHANNEL.value})


def parse_origin(origin: Origin | str) -> Origin:
    try:
        return Origin(origin)
    except ValueError:
        allowed = ", ".join(o.value for o in Origin)
        raise ValidationError(f"unknown turn origin {origin!r}; expected one of: {allowed}") from None


def recall_policy(
    origin: Origin | str, session_scopes: Sequence[str] = (), *, suppress: bool = False
) -> RecallPolicy:
    """Which memories a turn of this origin may have injected (``RECALL``, narrowed by the call).

    ``suppress`` turns recall off; without a session scope no conversation memory is
    included, since there is no conversation to hold it to.
    """
    rule = RECALL[parse_origin(origin)]
    if suppress or not rule.inject:
        return _SILENT
    return RecallPolicy(inject=True, include_conversation=rule.include_conversation and bool(session_scopes))


def origin_table() -> str:
    """``RECALL`` as the Markdown table of the docs and of this module's docstring."""

    def conversations(scope: Conversations) -> str:
        return "this session's" if scope == OWN else "none"

    rows = [
        "| origin | started by | `[Memory context]` | conversation memories recalled "
        "| memory tools read conversation memories | autosaved by default |",
        "|---|---|---|---|---|---|",
    ]
    for origin in Origin:
        rule = RECALL[origin]
        cells = (
            f"`{origin.value}`",
            STARTED_BY[origin],
            "yes" if rule.inject else "no (inherits the parent's)",
            conversations(rule.conversations),
            conversations(for_origin(origin.value)),
            "yes" if origin.value in AUTOSAVED_BY_DEFAULT else "no",
        )
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)
