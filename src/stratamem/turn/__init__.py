"""The payload lifecycle of an agent turn, kept in the store under the lattice.

Everything a turn carries besides memory -- recalled context, the session's
history, tool results, files, media, events and costs -- with one owner, a
lifetime and a bound each.  Nothing here becomes long-term memory unless a
memory write (such as an autosave) happens.
"""

from .autosave import AutosavePolicy, autosave_key, autosave_user_message, should_autosave
from .context import (
    ContextConfig,
    Origin,
    format_memory_block,
    inject_memory_context,
    recall_policy,
    strip_memory_context,
)
from .costs import (
    Budget,
    BudgetReport,
    BudgetStatus,
    CostLedger,
    CostRecord,
    ModelPrice,
    budget_status,
    call_cost,
    sanitize_price,
)
from .errors import (
    LimitExceededError,
    NotFoundError,
    PolicyBlockedError,
    TurnError,
    TurnStateError,
    ValidationError,
)
from .history import StoredMessage, Transcript
from .media import MediaAttachment, MediaKind, MediaLimits, check_attachment, load_attachment, media_kind
from .messages import Message, ToolCallRequest
from .observe import (
    Event,
    EventBus,
    EventLog,
    HistoryTrimmed,
    MemoryRecall,
    MemoryStore,
    Observer,
    PolicyDecision,
    ToolCall,
    ToolCallStarted,
)
from .recall import RecallResult, recall_block
from .render import render_memory_context
from .runtime import TrimReport, Turn, TurnSettings, UsageReport
from .scrub import bound_text, scrub_text, scrub_value
from .tool_results import (
    ToolResult,
    ToolResultLimits,
    mark_image_paths,
    process_tool_result,
    truncate_text,
    truncate_tool_message,
)
from .trim import TrimResult, estimate_tokens, sweep_orphans, trim_history
from .workspace import WorkspacePolicy

__all__ = [
    "AutosavePolicy",
    "Budget",
    "BudgetReport",
    "BudgetStatus",
    "ContextConfig",
    "CostLedger",
    "CostRecord",
    "Event",
    "EventBus",
    "EventLog",
    "HistoryTrimmed",
    "LimitExceededError",
    "MediaAttachment",
    "MediaKind",
    "MediaLimits",
    "MemoryRecall",
    "MemoryStore",
    "Message",
    "ModelPrice",
    "NotFoundError",
    "Observer",
    "Origin",
    "PolicyBlockedError",
    "PolicyDecision",
    "RecallResult",
    "StoredMessage",
    "ToolCall",
    "ToolCallRequest",
    "ToolCallStarted",
    "ToolResult",
    "ToolResultLimits",
    "Transcript",
    "TrimReport",
    "TrimResult",
    "Turn",
    "TurnError",
    "TurnSettings",
    "TurnStateError",
    "UsageReport",
    "ValidationError",
    "WorkspacePolicy",
    "autosave_key",
    "autosave_user_message",
    "bound_text",
    "budget_status",
    "call_cost",
    "check_attachment",
    "estimate_tokens",
    "format_memory_block",
    "inject_memory_context",
    "load_attachment",
    "mark_image_paths",
    "media_kind",
    "process_tool_result",
    "recall_block",
    "recall_policy",
    "render_memory_context",
    "sanitize_price",
    "scrub_text",
    "scrub_value",
    "should_autosave",
    "strip_memory_context",
    "sweep_orphans",
    "trim_history",
    "truncate_text",
    "truncate_tool_message",
]
