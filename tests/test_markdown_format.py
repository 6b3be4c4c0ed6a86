"""The Markdown file format round-trips any memory exactly, and reports bad files by line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratamem import Level, ValidationError
from stratamem.models import Memory
from stratamem.storage.markdown import format as fmt
from stratamem.validation import check_category, check_key, check_tags

T0 = datetime(2026, 1, 1, tzinfo=UTC)

text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=300)
keyish = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)
# Content that looks like the format itself: headings, escapes, field lines, blank lines.
tricky_lines = st.sampled_from(
    [
        "## k",
        "##",
        "\\## k",
        "\\\\##",
        "- category: core",
        "- tags: a",
        "",
        " ",
        "# title",
        "<!-- c -->",
        "```",
        "\r",
        "x\r",
        "##x",
        "\u2028",
    ]
)
tricky = st.lists(st.one_of(tricky_lines, text), min_size=1, max_size=8).map("\n".join).filter(bool)
times = st.integers(0, 4_000_000_000_000_000).map(lambda us: T0 + timedelta(microseconds=us))


@st.composite
def memories(draw):
    key = draw(keyish.filter(lambda k: _valid(check_key, k)))
    return Memory(
        key=key,
        content=draw(st.one_of(text, tricky)),
        level=draw(st.sampled_from(list(Level))),
        tags=check_tags(draw(st.lists(keyish.filter(lambda t: len(t) <= 128), max_size=4))),
        category=draw(
            st.one_of(
                st.sampled_from(["core", "daily", "notes"]),
                keyish.filter(lambda c: _valid(check_category, c)),
            )
        ),
        agent_id="main",
        session_id=draw(st.one_of(st.none(), keyish)),
        created_at=draw(times),
        updated_at=draw(times),
        lineage_id=draw(keyish),
        expires_at=draw(st.one_of(st.none(), times)),
    )


def _valid(check, value) -> bool:
    try:
        check(value)
    except ValidationError:
        return False
    return True


@settings(max_examples=150, deadline=None)
@given(st.lists(memories(), min_size=1, max_size=5, unique_by=lambda m: m.key))
def test_render_then_parse_is_identity(mems):
    text_ = fmt.render_file("main", Level.PUBLIC, "notes", mems)
    parsed = fmt.parse_file(text_, 1 << 20)
    got = {s.key: s.memory("main", mems[0].level, "x", T0) for s in parsed}
    for m in mems:
        back = got[m.key]
        assert back.content == m.content
        assert back.tags == m.tags and back.category == m.category
        assert (back.created_at, back.updated_at, back.expires_at) == (
            m.created_at,
            m.updated_at,
            m.expires_at,
        )
        assert (back.lineage_id, back.session_id) == (m.lineage_id, m.session_id)
    assert len(parsed) == len(mems)


@given(st.text(min_size=1, max_size=40))
def test_segment_names_are_safe_and_reversible(name):
    seg = fmt.encode_segment(name)
    assert "/" not in seg and not seg.startswith(".") and seg not in ("", ".", "..")
    assert seg.lower() != "memory" and len(seg.encode()) <= fmt.MAX_SEGMENT_BYTES + 1
    if not seg.startswith(fmt.LONG_PREFIX):
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            return
        assert fmt.decode_segment(seg) == name


def test_hand_written_section_without_fields():
    sections = fmt.parse_file("# notes\n\n## colour\n\nblue\n", 1000)
    assert [(s.key, s.content, s.category, s.lineage_id) for s in sections] == [
        ("colour", "blue", None, None)
    ]


@pytest.mark.parametrize(
    "text_, line, words",
    [
        ("stray text\n## k\n\nv\n", 1, "outside a section"),
        ("## k\n\nv\n\n## k\n\nw\n", 5, "appears twice"),
        ("## k\n\n- created: yesterday\n\nv\n", 3, "ISO 8601"),
        ("## k\n\n- category: core\n- colour: red\n\nv\n", 4, "unknown field"),
        ("## k\n\n- tags: [1, 2]\n\nv\n", 3, "tags"),
        ("##\n\nv\n", 1, "empty"),
        ("## k\n\n", 1, "content"),
    ],
)
def test_malformed_files_name_the_line(text_, line, words):
    with pytest.raises(fmt.FormatError) as info:
        fmt.parse_file(text_, 1000)
    assert info.value.line == line and words in info.value.message


def test_layout_paths():
    assert fmt.file_for("a", Level.PUBLIC, "core", T0) == "a/PUBLIC/MEMORY.md"
    assert fmt.file_for("a", Level.INTERNAL, "daily", T0) == "a/INTERNAL/memory/2026-01-01.md"
    assert fmt.file_for("a", Level.INTERNAL, "memory", T0) == "a/INTERNAL/%6Demory.md"
    assert fmt.file_for("a", Level.INTERNAL, "../x", T0) == "a/INTERNAL/%2E%2E%2Fx.md"
    assert fmt.place_of("a/RESTRICTED/memory/2026-01-01.md").default_category == "daily"
    with pytest.raises(Exception, match="unknown level folder"):
        fmt.place_of("a/SECRET/MEMORY.md")


def test_a_file_an_editor_turned_to_crlf_still_parses():
    sections = fmt.parse_file("## k\r\n\r\n- category: notes\r\n- tags: a, b\r\n\r\nbody\r\n", 1000)
    assert [(s.key, s.category, s.tags, s.content) for s in sections] == [
        ("k", "notes", ("a", "b"), "body\r")
    ]
