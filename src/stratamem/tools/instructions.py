"""What an MCP server tells the model about its memory, for each tool profile.

MCP sends these ``instructions`` once, in the answer to ``initialize``; a
host puts them before any tool description, so they say what one tool's
description cannot: when something is worth saving, what must never be
saved, and that the classification level is not the model's to choose. Each
sentence names the tools it is about and is left out when the profile (or a
read-only connection) does not offer every one of them, so the text never
sends the model to a tool it cannot call
(``tests/tools/test_tools_instructions.py`` checks every profile, both ways).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .specs import MCP_MEMORY, PROFILES, TRIGGERFISH, ZEROCLAW, specs

__all__ = ["instructions"]

_WORTH = (
    "when the user states a lasting fact, preference, decision or correction, or asks you to remember "
    "something; not small talk, details that only matter for this reply, or what is already saved"
)
_SECRETS = (
    "Never save secrets (passwords, API keys, access tokens, private keys, card numbers): the store's "
    "scanner refuses any write that carries one, so leave them out instead of retrying."
)
_LEVELS = (
    "Levels are automatic: every memory is classified at the conversation's current security level, "
    "you cannot choose it (a level or classification argument is ignored), and you only ever see "
    "memories at or below it."
)
_READ_ONLY = "This connection is read-only: look things up, nothing you do here is saved."


@dataclass(frozen=True, slots=True)
class _Sentence:
    """One sentence of a profile's instructions and the tools it names (all must be offered)."""

    text: str
    tools: tuple[str, ...] = ()
    writing: bool | None = None  # True: only when the connection may write; False: only when it may not


_BY_PROFILE: dict[str, tuple[_Sentence, ...]] = {
    TRIGGERFISH: (
        _Sentence("Persistent memory for this agent, kept across conversations and restarts."),
        _Sentence(
            f"Save with memory_save (memory_save_many for several at once) {_WORTH}; "
            "search before saving, since saving a key again replaces its content.",
            ("memory_save", "memory_save_many"),
        ),
        _Sentence(
            "Before answering about the user or earlier work, look it up: memory_search with keywords or a "
            "question, memory_get for an exact key, memory_list to page through everything.",
            ("memory_search", "memory_get", "memory_list"),
        ),
        _Sentence("memory_delete removes a memory that is wrong or no longer true.", ("memory_delete",)),
    ),
    ZEROCLAW: (
        _Sentence("Persistent memory for this agent, kept across conversations and restarts."),
        _Sentence(
            f"Store with memory_store (memory_store_many for several at once) {_WORTH}; "
            "storing a key again replaces it. Category core is for lasting facts, daily for notes on "
            "today's work, conversation for what only this conversation needs.",
            ("memory_store", "memory_store_many"),
        ),
        _Sentence(
            "Before answering about the user or earlier work, call memory_recall with keywords or a time "
            "range; memory_export lists memories by category, session or time.",
            ("memory_recall", "memory_export"),
        ),
        _Sentence(
            "memory_forget removes a memory that is wrong or no longer true; memory_purge removes all "
            "that one session stored.",
            ("memory_forget", "memory_purge"),
        ),
        _Sentence(
            "knowledge keeps a graph of named people, projects and decisions: capture them and relate "
            "them explicitly, then search or follow neighbors to find them.",
            ("knowledge",),
            writing=True,
        ),
        _Sentence(
            "knowledge holds a graph of named people, projects and decisions: search it or follow "
            "neighbors to find them.",
            ("knowledge",),
            writing=False,
        ),
    ),
    MCP_MEMORY: (
        _Sentence(
            "Persistent memory for this agent as a graph, kept across conversations: entities (people, "
            "organisations, projects, ...) with observations (facts about them) and relations between them."
        ),
        _Sentence(
            f"Save to the graph {_WORTH}. Use create_entities for someone or something new, "
            "add_observations for a new fact about a known entity, create_relations for how two entities "
            "relate (in active voice); search first, so an entity is recorded once.",
            ("create_entities", "add_observations", "create_relations"),
        ),
        _Sentence(
            "Before answering about the user or earlier work, look it up: search_nodes with keywords, "
            "open_nodes for the entities you need, read_graph to page through everything.",
            ("search_nodes", "open_nodes", "read_graph"),
        ),
        _Sentence(
            "delete_observations, delete_relations and delete_entities remove what is wrong or no longer true.",
            ("delete_observations", "delete_relations", "delete_entities"),
        ),
    ),
}


@functools.lru_cache(maxsize=len(PROFILES) * 2)
def instructions(profile: str = TRIGGERFISH, read_only: bool = False) -> str:
    """The MCP server instructions for ``profile``: only sentences whose tools the connection offers."""
    offered = {spec.name for spec in specs(profile, read_only=read_only)}
    writing = any(spec.writes for spec in specs(profile, read_only=read_only))
    sentences = [
        s.text
        for s in _BY_PROFILE[profile]
        if set(s.tools) <= offered and (s.writing is None or s.writing == writing)
    ]
    sentences += [_SECRETS if writing else _READ_ONLY, _LEVELS]
    return " ".join(sentences)
