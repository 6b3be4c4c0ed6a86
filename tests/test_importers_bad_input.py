"""Every importer against hostile files: truncated, mixed-format, huge, duplicate keys, invalid UTF-8.

Each must end in a clear error naming the position (file, line, byte, record or column), exit 2, and
import nothing — for the other stores' formats (mem0, markdown-notes, zeroclaw), the MCP memory server's
``memory.jsonl`` and stratamem's own JSON Lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli
from stratamem.importers import sources


def _import(db: Path, path: Path, fmt: str, level: str | None = "PUBLIC"):
    args = ["--db", str(db), "import", str(path), "--format", fmt, *(["--level", level] if level else [])]
    return CliRunner().invoke(cli, args)


def _nothing_imported(db: Path) -> None:
    with sm.open_store(str(db)) as store:
        session = store.session("main")
        session.escalate(sm.Level.RESTRICTED, "check")
        assert session.list() == []
        stats = session.graph.stats()
        assert (stats.nodes, stats.edges) == (0, 0)


def _refused(db: Path, path: Path, fmt: str, *positions: str) -> None:
    r = _import(db, path, fmt)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    for position in positions:
        assert position in r.output, r.output
    _nothing_imported(db)


# --- Mem0 (one JSON document) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "positions"),
    [
        # duplicate keys inside a record: the repeated key is located
        (
            '{"results": [\n  {"id": "a", "memory": "x"},\n  {"id": "b", "memory": "y", "memory": "z"}\n]}',
            ["line 3 column 30: duplicate key 'memory'"],
        ),
        # mixed format: JSON Lines (one object per line) is not one Mem0 document
        ('{"id": "a", "memory": "x"}\n{"id": "b", "memory": "y"}\n', ["line 2 column 1", "Extra data"]),
        # truncated in the middle of a string
        ('{"results": [{"id": "a", "memory": "unterminat', ["line 1 column", "Unterminated"]),
    ],
    ids=["duplicate-keys", "mixed-format", "truncated"],
)
def test_mem0(tmp_path, text, positions):
    path = tmp_path / "mem0.json"
    path.write_text(text, encoding="utf-8")
    _refused(tmp_path / "s.db", path, "mem0", *positions)


def test_mem0_huge_file_and_huge_record(tmp_path, monkeypatch):
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps([{"id": "a", "memory": "x" * 70_000}]), encoding="utf-8")
    _refused(tmp_path / "s.db", path, "mem0", "record 1")  # over max_content_bytes
    monkeypatch.setattr(sources, "MAX_FILE_BYTES", 1000)
    _refused(tmp_path / "s.db", path, "mem0", "mem0.json", "the limit is 1000")


# --- MCP memory server memory.jsonl ------------------------------------------------------------------

ENTITY = '{"type": "entity", "name": "Sam", "entityType": "person", "observations": ["likes tea"]}'


@pytest.mark.parametrize(
    ("text", "positions"),
    [
        (
            ENTITY
            + '\n{"type": "entity", "name": "A", "name": "B", "entityType": "t", "observations": []}\n',
            ["line 2: not valid JSON at line 2 column 33: duplicate key 'name'"],
        ),
        (ENTITY + "\n" + ENTITY.replace("person", "project") + "\n", ["line 2", "'Sam' repeats line 1"]),
        (ENTITY + '\n{"type": "relation", "from": "Sam", "to"', ["line 2", "not valid JSON"]),
        ('{"results": [{"id": "a", "memory": "x"}]}\n', ["line 1", '"type" must be']),
    ],
    ids=["duplicate-keys", "repeated-entity", "truncated", "mixed-format"],
)
def test_mcp_memory(tmp_path, text, positions):
    path = tmp_path / "memory.jsonl"
    path.write_text(text, encoding="utf-8")
    _refused(tmp_path / "s.db", path, "mcp-memory", *positions)


def test_mcp_memory_invalid_utf8_and_huge(tmp_path, monkeypatch):
    path = tmp_path / "memory.jsonl"
    path.write_bytes(ENTITY.encode() + b'\n{"type": "entity", "name": "caf\xe9"}\n')
    offset = path.read_bytes().index(b"\xe9")
    _refused(tmp_path / "s.db", path, "mcp-memory", f"line 2 (byte {offset})", "not valid UTF-8")
    with sm.open_store(str(tmp_path / "s.db")) as store, pytest.raises(sm.ValidationError, match="line 2"):
        store.import_graph(path)
    path.write_text(ENTITY + "\n", encoding="utf-8")
    monkeypatch.setattr(sources, "MAX_FILE_BYTES", 50)
    _refused(tmp_path / "s.db", path, "mcp-memory", "memory.jsonl", "the limit is 50")


# --- stratamem's own JSON Lines ------------------------------------------------------------------------

LINE = '{"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "main"}'


@pytest.mark.parametrize(
    ("text", "positions"),
    [
        (
            LINE + '\n{"key": "a", "key": "b", "content": "c", "level": "PUBLIC", "agent_id": "main"}\n',
            ["line 2: not valid JSON at line 2 column 14: duplicate key 'key'"],
        ),
        (
            LINE + "\n" + LINE.replace('"c"', '"d"') + "\n",
            ["line 2", "'k' of agent 'main' at PUBLIC repeats line 1"],
        ),
        (LINE + '\n{"key": "x", "content": "trunc', ["line 2", "not valid JSON"]),
    ],
    ids=["duplicate-keys", "repeated-version", "truncated"],
)
def test_jsonl(tmp_path, text, positions):
    path = tmp_path / "export.jsonl"
    path.write_text(text, encoding="utf-8")
    _refused(tmp_path / "s.db", path, "jsonl", *positions)


def test_jsonl_same_key_at_two_levels_is_two_versions(tmp_path):
    path = tmp_path / "export.jsonl"
    path.write_text(LINE + "\n" + LINE.replace("PUBLIC", "INTERNAL") + "\n", encoding="utf-8")
    assert _import(tmp_path / "s.db", path, "jsonl", level=None).exit_code == 0


# --- Markdown notes (basic-memory, Obsidian) -----------------------------------------------------------


def test_markdown_notes_duplicate_front_matter_keys(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "ok.md").write_text("fine", encoding="utf-8")
    (vault / "dup.md").write_text("---\ntags: [a]\ntitle: t\ntags: [b]\n---\nbody\n", encoding="utf-8")
    _refused(tmp_path / "s.db", vault, "markdown-notes", "dup.md: line 4", "'tags' is given twice")


def test_markdown_notes_huge_note(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "big.md").write_text("word " * 400, encoding="utf-8")
    monkeypatch.setattr(sources, "MAX_FILE_BYTES", 1000)
    _refused(tmp_path / "s.db", vault, "markdown-notes", "big.md", "the limit is 1000")


# --- ZeroClaw workspace ---------------------------------------------------------------------------------


def test_zeroclaw_invalid_utf8_and_huge(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("- **lang**: Python\n", encoding="utf-8")
    (root / "memory" / "2026-02-14.md").write_bytes(b"# day\n- caf\xe9\n")
    _refused(tmp_path / "s.db", root, "zeroclaw", "memory/2026-02-14.md: line 2 (byte 11)", "not valid UTF-8")
    (root / "memory" / "2026-02-14.md").write_text("- fine\n", encoding="utf-8")
    monkeypatch.setattr(sources, "MAX_FILE_BYTES", 10)
    _refused(tmp_path / "s.db", root, "zeroclaw", "MEMORY.md", "the limit is 10")


# --- the strict JSON reader itself ----------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from stratamem.transfer import DuplicateKey, strict_json  # noqa: E402

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(value=_json, key=st.text(max_size=6), indent=st.sampled_from([None, 1]), ascii_only=st.booleans())
def test_strict_json_reads_json_and_locates_a_repeated_key(value, key, indent, ascii_only):
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert strict_json(text) == value
    # the same document inside an object that repeats a key: refused, at the second occurrence
    wrapped = json.dumps({key: value}, indent=indent, ensure_ascii=ascii_only)
    repeated = wrapped[:-1].rstrip() + ", " + json.dumps(key, ensure_ascii=ascii_only) + ": 1}"
    with pytest.raises(DuplicateKey) as raised:
        strict_json(repeated)
    offset = repeated.rindex(", " + json.dumps(key, ensure_ascii=ascii_only)) + 2
    line, column = repeated.count("\n", 0, offset) + 1, offset - repeated.rfind("\n", 0, offset)
    assert (raised.value.key, raised.value.lineno, raised.value.colno) == (key, line, column)
