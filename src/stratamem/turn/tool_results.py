"""Bounding tool output before it enters the conversation.

A single runaway tool (a log dump, a large file) can evict the whole history
from the context window, so results are cut to a character budget.  The
head and the tail are kept because that is where commands put their
summary and their error.  Cuts never break an ``[IMAGE:...]`` marker (the
runtime would load a wrong path) or a surrogate pair (encoders reject it).
"""

from __future__ import annotations

import bisect
import json
import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from ..budget import DEFAULT_MAX_ANSWER_CHARS
from .errors import ValidationError
from .textcut import safe_cut_index

__all__ = [
    "DEFAULT_MAX_TOOL_RESULT_CHARS",
    "IMAGE_MARKER_RE",
    "ToolResult",
    "ToolResultLimits",
    "mark_image_paths",
    "process_tool_result",
    "tool_message_content",
    "truncate_text",
    "truncate_tool_message",
]

# One budget with the memory tools' answers (stratamem.budget): a memory tool's answer, already fitted
# with a cursor, is never cut again here.
DEFAULT_MAX_TOOL_RESULT_CHARS = DEFAULT_MAX_ANSWER_CHARS
IMAGE_MARKER_RE = re.compile(r"\[IMAGE:[^\]\[\n]*\]")  # no "[" inside: keeps the scan linear
_IMAGE_PATH_RE = re.compile(
    r"(?<![\w/.~\[:-])(?P<path>(?:~|\.{1,2})?/?(?:[\w.-]+/)*[\w.-]*\w\.(?:png|jpe?g|gif|webp|bmp))(?![\w/])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's outcome; ``truncated`` is set when this package cut the output."""

    success: bool
    output: str = ""
    error: str | None = None
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class ToolResultLimits:
    """``max_tool_result_chars`` of 0 disables truncation.

    ``file_producing_tools`` names the tools whose output may point at
    images they wrote; other tools' paths are just text.
    """

    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS
    file_producing_tools: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.max_tool_result_chars < 0:
            raise ValidationError("max_tool_result_chars must be >= 0 (0 disables truncation)")


def _notice(dropped: int) -> str:
    return f"\n\n[... {dropped} characters truncated ...]\n\n"


def _outside_markers(text: str, index: int, *, toward_start: bool) -> int:
    """Move a cut out of any image marker it falls inside, dropping the marker."""
    for match in IMAGE_MARKER_RE.finditer(text):
        if match.start() < index < match.end():
            return match.start() if toward_start else match.end()
        if match.start() >= index:
            break
    return index


def truncate_text(text: str, max_chars: int) -> str:
    """Cut ``text`` to at most ``max_chars`` characters, the notice of what was dropped included.

    The kept text is the first two thirds and the last third of what the
    notice leaves. Cut points only ever move *inward* (dropping the marker or
    pair they would split), so the result never exceeds ``max_chars``; a limit
    too small for the notice keeps only the head.
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    room = max_chars - len(_notice(len(text)))  # the widest notice this text can need
    if room < 2:
        return text[: safe_cut_index(text, _outside_markers(text, max_chars, toward_start=True))]
    head_budget = room * 2 // 3
    head_end = _outside_markers(text, head_budget, toward_start=True)
    head_end = safe_cut_index(text, head_end, toward_start=True)
    tail_start = _outside_markers(text, len(text) - (room - head_budget), toward_start=False)
    tail_start = safe_cut_index(text, tail_start, toward_start=False)
    return text[:head_end] + _notice(tail_start - head_end) + text[tail_start:]


#: a wrapper whose JSON escaping keeps overshooting after this many narrower cuts loses its content
_MAX_WRAPPER_CUTS = 16


def truncate_tool_message(text: str, max_chars: int) -> str:
    """Truncate a tool message to ``max_chars``; a JSON ``{"tool_call_id", "content"}`` wrapper stays
    valid JSON and only its content is cut, narrower until the whole wrapper fits."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # a hostile tool result nested too deeply is plain text
        data = None
    if not (isinstance(data, dict) and "tool_call_id" in data and isinstance(data.get("content"), str)):
        return truncate_text(text, max_chars)
    content = data["content"]
    budget = max_chars - len(json.dumps({**data, "content": ""}, ensure_ascii=False))
    for _ in range(_MAX_WRAPPER_CUTS):
        if budget <= 0:
            break
        dumped = json.dumps({**data, "content": truncate_text(content, budget)}, ensure_ascii=False)
        if len(dumped) <= max_chars:
            return dumped
        budget -= len(dumped) - max_chars  # escaped characters took more room than they count
    return json.dumps({**data, "content": ""}, ensure_ascii=False)


def _default_exists(path: str) -> bool:
    return os.path.isfile(os.path.expanduser(path))


def mark_image_paths(
    output: str,
    tool_name: str,
    file_producing_tools: Collection[str],
    *,
    exists: Callable[[str], bool] = _default_exists,
) -> str:
    """Turn paths of images a tool wrote into ``[IMAGE:path]`` markers.

    Only tools declared as file-producing, only files that exist (a path in
    a ``cat`` of some README is not an attachment), and each path at most
    once: a path already marked anywhere in the output is left alone.
    """
    if tool_name not in file_producing_tools:
        return output
    markers = list(IMAGE_MARKER_RE.finditer(output))
    marked = {m.group(0)[len("[IMAGE:") : -1] for m in markers}
    starts = [m.start() for m in markers]

    def inside_marker(position: int) -> bool:
        i = bisect.bisect_right(starts, position) - 1
        return i >= 0 and position < markers[i].end()

    def replace_path(match: re.Match[str]) -> str:
        path = match.group("path")
        if inside_marker(match.start()) or path in marked or not exists(path):
            return path
        marked.add(path)
        return f"[IMAGE:{path}]"

    return _IMAGE_PATH_RE.sub(replace_path, output)


def process_tool_result(
    tool_name: str,
    result: ToolResult,
    limits: ToolResultLimits = ToolResultLimits(),
    *,
    exists: Callable[[str], bool] = _default_exists,
) -> ToolResult:
    """Mark images, then bound output and error, as one step per result."""
    output = result.output
    if result.success:
        output = mark_image_paths(output, tool_name, limits.file_producing_tools, exists=exists)
    limit = limits.max_tool_result_chars
    cut = truncate_tool_message(output, limit)
    error = truncate_text(result.error, limit) if result.error is not None else None
    return ToolResult(
        success=result.success, output=cut, error=error, truncated=result.truncated or cut != output
    )


def tool_message_content(result: ToolResult) -> str:
    """The text the model sees for a result: output, or the error plainly labelled."""
    if result.success:
        return result.output
    detail = result.error or "tool failed without an error message"
    return f"Error: {detail}" + (f"\n{result.output}" if result.output else "")
