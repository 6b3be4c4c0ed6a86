"""What counts as autosave noise.

Autosaved conversation turns, scheduler prompts and previously injected
memory blocks are echoes of the agent's own plumbing.  Saving them would
fill memory with copies of itself, and recalling them would feed the agent
its own previous prompts, so both autosave and recall skip them.
"""

from __future__ import annotations

__all__ = ["AUTOSAVE_KEY_PREFIXES", "NOISE_CONTENT_PREFIXES", "is_noise_content", "is_noise_key"]

AUTOSAVE_KEY_PREFIXES: tuple[str, ...] = ("user_msg_", "assistant_resp_")
NOISE_CONTENT_PREFIXES: tuple[str, ...] = ("[cron:", "[heartbeat task", "[Memory context]")


def is_noise_key(key: str) -> bool:
    """Keys written by autosave itself."""
    return key.startswith(AUTOSAVE_KEY_PREFIXES)


def is_noise_content(content: str) -> bool:
    """Scheduler prompts and injected memory blocks."""
    return content.lstrip().startswith(NOISE_CONTENT_PREFIXES)
