from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratamem.turn import (
    ToolResult,
    ToolResultLimits,
    ValidationError,
    mark_image_paths,
    process_tool_result,
    truncate_text,
    truncate_tool_message,
)
from stratamem.turn.textcut import is_high_surrogate, is_low_surrogate
from stratamem.turn.tool_results import IMAGE_MARKER_RE, tool_message_content

PAIR = "\ud83d\ude00"  # a surrogate pair held as two code points
MARKERS = ["[IMAGE:/tmp/a.png]", "[IMAGE:./out/chart-2024.jpeg]", f"[IMAGE:/tmp/{PAIR}.png]"]

pieces = st.one_of(
    st.text(alphabet="ab []:\n", max_size=15),  # no ".": keeps the notice unambiguous
    st.sampled_from(MARKERS),
    st.just(PAIR),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="."), max_size=5),
)
texts = st.lists(pieces, max_size=30).map("".join)


def has_split_pair(text: str) -> bool:
    for i, ch in enumerate(text):
        if is_high_surrogate(ch) and not (i + 1 < len(text) and is_low_surrogate(text[i + 1])):
            return True
        if is_low_surrogate(ch) and not (i > 0 and is_high_surrogate(text[i - 1])):
            return True
    return False


def check_cut(original: str, result: str) -> None:
    """``result`` is a head and a tail of ``original`` around an exact notice, or a head alone."""
    if "\n\n[... " not in result:
        assert original.startswith(result)
    else:
        head, _, rest = result.partition("\n\n[... ")
        count, _, tail = rest.partition(" characters truncated ...]\n\n")
        assert original.startswith(head) and original.endswith(tail)
        assert int(count) == len(original) - len(head) - len(tail)
    assert not has_split_pair(result)


def check_truncation(original: str, result: str, max_chars: int) -> None:
    if len(original) <= max_chars:
        assert result == original
        return
    assert len(result) <= max_chars  # the notice counts inside the limit
    check_cut(original, result)
    assert result.count("[IMAGE:") == len(IMAGE_MARKER_RE.findall(result))
    assert set(IMAGE_MARKER_RE.findall(result)) <= set(IMAGE_MARKER_RE.findall(original))


@settings(max_examples=400, deadline=None)
@given(texts, st.integers(1, 400))
def test_truncation_keeps_markers_and_surrogate_pairs_whole(text: str, max_chars: int) -> None:
    check_truncation(text, truncate_text(text, max_chars), max_chars)


@settings(max_examples=200, deadline=None)
@given(texts, st.integers(1, 400), st.booleans())
def test_json_wrapper_stays_valid_and_only_content_is_cut(
    text: str, max_chars: int, ascii_only: bool
) -> None:
    wrapped = json.dumps({"tool_call_id": "call_7", "content": text}, ensure_ascii=ascii_only)
    result = truncate_tool_message(wrapped, max_chars)
    data = json.loads(result)
    assert set(data) == {"tool_call_id", "content"}
    assert data["tool_call_id"] == "call_7"
    content = json.loads(wrapped)["content"]
    frame = len(json.dumps({"tool_call_id": "call_7", "content": ""}, ensure_ascii=False))
    if len(wrapped) > max_chars and max_chars > frame:
        assert len(result) <= max_chars  # the whole message, wrapper and notice included
    check_cut(content, data["content"])


def test_truncation_shape() -> None:
    text = "A" * 60 + "B" * 40
    assert truncate_text(text, 80) == "A" * 28 + "\n\n[... 58 characters truncated ...]\n\n" + "B" * 14
    assert truncate_text(text, 30) == "A" * 30  # no room for the notice: the head alone
    assert truncate_text(text, 0) == text  # 0 disables
    assert truncate_text(text, 100) == text


def test_cut_inside_marker_drops_the_whole_marker() -> None:
    text = "x" * 18 + "[IMAGE:/tmp/a.png]" + "y" * 100
    result = truncate_text(text, 75)
    assert result.startswith("x" * 18 + "\n\n[... ")
    assert "[IMAGE" not in result


def test_cut_never_splits_a_surrogate_pair() -> None:
    text = "a" + PAIR * 30
    result = truncate_text(text, 10)
    assert not has_split_pair(result)
    result = truncate_text(text * 3, 50)
    assert not has_split_pair(result)


def test_non_wrapper_json_is_cut_as_text() -> None:
    text = json.dumps({"content": "z" * 200})
    assert truncate_tool_message(text, 30) == truncate_text(text, 30)


def test_default_limit_is_50000() -> None:
    big = ToolResult(True, "q" * 60_000)
    out = process_tool_result("shell", big)
    assert out.truncated
    assert len(out.output) <= 50_000 and out.output.count("q") > 49_900
    assert not process_tool_result("shell", ToolResult(True, "small")).truncated


def test_the_notice_counts_inside_the_limit() -> None:
    """A 1,000-character result at a 200-character limit is at most 200 characters, notice included."""
    out = process_tool_result(
        "shell", ToolResult(True, "x" * 1000), ToolResultLimits(max_tool_result_chars=200)
    )
    assert out.truncated and len(out.output) <= 200 and "characters truncated" in out.output
    wrapped = json.dumps({"tool_call_id": "call_1", "content": '"' * 1000})
    assert len(truncate_tool_message(wrapped, 200)) <= 200


def test_negative_limit_refused() -> None:
    with pytest.raises(ValidationError):
        ToolResultLimits(max_tool_result_chars=-1)


# -- image markers ---------------------------------------------------------------


def test_images_marked_only_for_file_producing_tools_and_existing_files(tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    chart.write_bytes(b"\x89PNG")
    missing = tmp_path / "missing.png"
    output = f"Saved {chart} (see also {missing})"
    assert mark_image_paths(output, "plot", {"plot"}) == f"Saved [IMAGE:{chart}] (see also {missing})"
    assert mark_image_paths(output, "shell", {"plot"}) == output


def test_images_never_marked_twice(tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    chart.write_bytes(b"\x89PNG")
    already = f"[IMAGE:{chart}] saved to {chart}"
    assert mark_image_paths(already, "plot", {"plot"}) == already
    twice = f"{chart} and again {chart}"
    assert mark_image_paths(twice, "plot", {"plot"}) == f"[IMAGE:{chart}] and again {chart}"
    once = mark_image_paths(f"wrote {chart}", "plot", {"plot"})
    assert mark_image_paths(once, "plot", {"plot"}) == once


def test_process_marks_then_truncates() -> None:
    limits = ToolResultLimits(max_tool_result_chars=100, file_producing_tools=frozenset({"plot"}))
    result = process_tool_result(
        "plot", ToolResult(True, "/w/p.png " + "n" * 300), limits, exists=lambda p: p == "/w/p.png"
    )
    assert result.output.startswith("[IMAGE:/w/p.png] ")
    assert result.truncated


def test_failed_result_content() -> None:
    assert tool_message_content(ToolResult(False, "", "exit 1")) == "Error: exit 1"
    assert tool_message_content(ToolResult(False, "partial", None)).startswith("Error: tool failed")
    assert tool_message_content(ToolResult(True, "ok")) == "ok"
