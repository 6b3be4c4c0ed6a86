"""``stratamem import --format mem0|markdown-notes|zeroclaw``: all or nothing, positions, operator's agent and level."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli
from stratamem.importers import formats

MEM0 = {
    "results": [
        {
            "id": "a1",
            "memory": "Prefers Python",
            "hash": "h",
            "metadata": None,
            "categories": ["preferences"],
            "created_at": "2024-07-25T23:57:00.856Z",
            "updated_at": None,
            "user_id": "alice",
        },
        {
            "id": "a2",
            "memory": "Lives in Lisbon",
            "created_at": "2024-07-26T10:00:00-07:00",
            "user_id": "alice",
        },
    ]
}


@pytest.fixture
def run(tmp_path):
    db = str(tmp_path / "import.db")

    def invoke(*args, input=None):
        return CliRunner().invoke(cli, ["--db", db, *args], input=input)

    invoke.db = db
    return invoke


def _memories(db, agent="main", level="RESTRICTED"):
    store = sm.open_store(db)
    try:
        session = store.session(agent)
        session.escalate(sm.Level.parse(level), "test")
        return {m.key: m for m in session.list()}
    finally:
        store.close()


def test_registry_finds_every_format():
    assert {"mem0", "markdown-notes", "zeroclaw"} <= set(formats())


def test_mem0_lands_at_the_operators_agent_and_level(run, tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(MEM0), encoding="utf-8")
    r = run(
        "--json", "import", str(path), "--format", "mem0", "--level", "CONFIDENTIAL", "--agent", "assistant"
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == {"imported": 2} and "read 2 memories" in r.stderr
    got = _memories(run.db, "assistant")
    assert set(got) == {"mem0-a1", "mem0-a2"}
    one = got["mem0-a1"]
    assert (
        one.level == sm.Level.CONFIDENTIAL and one.content == "Prefers Python" and one.agent_id == "assistant"
    )
    assert set(one.tags) == {"mem0", "preferences", "user:alice"} and one.created_at.year == 2024
    assert _memories(run.db, "assistant", "INTERNAL") == {}  # nothing below the chosen level
    # a bare list works too
    path.write_text(json.dumps(MEM0["results"][:1]), encoding="utf-8")
    assert run("import", str(path), "--format", "mem0", "--level", "PUBLIC").exit_code == 0


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ('{"results": [{"id": "a", "memory": "x"}, {"id": "b", "memory": ', "line 1 column"),
        ('{"results": [], "results": []}', "duplicate key"),
        (
            '{"results": [{"id": "a", "memory": "x"}, {"id": "a", "memory": "y"}]}',
            "record 2: id 'a' repeats record 1",
        ),
        ('{"results": [{"id": "a", "memory": "x"}, {"id": "b", "memory": ""}]}', "record 2"),
        ('{"results": [{"id": "a", "memory": "x"}, "text"]}', "record 2"),
        ('{"memories": []}', "results"),
        ("[1, 2", "line 1"),
    ],
)
def test_mem0_bad_files_import_nothing_and_say_where(run, tmp_path, text, position):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    r = run("import", str(path), "--format", "mem0", "--level", "PUBLIC")
    assert r.exit_code == 2 and position in r.output and "Traceback" not in r.output
    assert _memories(run.db) == {}


def test_invalid_utf8_names_the_line(run, tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"results": [\n{"id": "a", "memory": "caf\xe9"}]}')
    r = run("import", str(path), "--format", "mem0", "--level", "PUBLIC")
    assert r.exit_code == 2 and "line 2 (byte" in r.output and "not valid UTF-8" in r.output


def test_a_poisoned_record_refuses_the_whole_import(run, tmp_path):
    records = [*MEM0["results"], {"id": "p", "memory": "cat ~/.ssh/id_rsa"}]
    path = tmp_path / "poison.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    r = run("import", str(path), "--format", "mem0", "--level", "PUBLIC")
    assert r.exit_code == 4 and _memories(run.db) == {}


def test_foreign_formats_need_a_level_and_the_right_source(run, tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(MEM0), encoding="utf-8")
    assert "--level" in run("import", str(path), "--format", "mem0").output
    assert run("import", str(path), "--format", "nope", "--level", "PUBLIC").exit_code == 2
    assert run("import", str(tmp_path), "--format", "mem0", "--level", "PUBLIC").exit_code == 2
    assert run("import", str(path), "--format", "zeroclaw", "--level", "PUBLIC").exit_code == 2
    assert run("import", str(tmp_path), "--level", "PUBLIC").exit_code == 2


def _notes(root):
    (root / "projects").mkdir(parents=True)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "skip.md").write_text("not a note", encoding="utf-8")
    (root / "projects" / "lisbon.md").write_text(
        '---\ntitle: Lisbon\ntags: [move, "#travel"]\ntype: note\ncreated: 2024-05-01\n---\n\nWe move in May.\n',
        encoding="utf-8",
    )
    (root / "inbox.md").write_text("No front matter, tags: ignored.\nSecond line.", encoding="utf-8")
    (root / "empty.md").write_text("---\ntags: x\n---\n\n", encoding="utf-8")


def test_markdown_notes_one_note_one_memory(run, tmp_path):
    root = tmp_path / "vault"
    _notes(root)
    r = run("import", str(root), "--format", "markdown-notes", "--level", "INTERNAL")
    assert r.exit_code == 0, r.output
    got = _memories(run.db)
    assert set(got) == {"projects/lisbon", "inbox"}
    note = got["projects/lisbon"]
    assert (
        note.content == "We move in May." and set(note.tags) == {"move", "travel"} and note.category == "note"
    )
    assert note.level == sm.Level.INTERNAL and note.created_at.year == 2024
    assert got["inbox"].content == "No front matter, tags: ignored.\nSecond line."


@pytest.mark.parametrize(
    ("name", "body", "position"),
    [
        ("broken.md", "---\ntags: [a, b\n---\nbody", "broken.md: line"),
        ("open.md", "---\ntags: a\nbody without end", "open.md: line 1: front matter is not closed"),
        ("list.md", "---\n- a\n- b\n---\nbody", "list.md: line 2"),
    ],
)
def test_markdown_notes_bad_front_matter(run, tmp_path, name, body, position):
    root = tmp_path / "vault"
    _notes(root)
    (root / name).write_text(body, encoding="utf-8")
    r = run("import", str(root), "--format", "markdown-notes", "--level", "PUBLIC")
    assert r.exit_code == 2 and position in r.output, r.output
    assert _memories(run.db) == {}


def test_markdown_notes_bad_bytes_and_huge_notes(run, tmp_path):
    root = tmp_path / "vault"
    _notes(root)
    (root / "latin1.md").write_bytes(b"ol\xe1\n")
    (root / "huge.md").write_text("x" * 200_000, encoding="utf-8")
    r = run("import", str(root), "--format", "markdown-notes", "--level", "PUBLIC")
    assert r.exit_code == 2 and "latin1.md: line 1 (byte 2)" in r.output and "huge.md" in r.output
    assert _memories(run.db) == {}


def _zeroclaw(root):
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text(
        "# MEMORY.md — Long-Term Memory\n\n## Preferences\n- **user-lang**: prefers Python\n- Likes short answers\n",
        encoding="utf-8",
    )
    (root / "memory" / "2026-02-14.md").write_text(
        "# 2026-02-14\n\n- Booked the flight to Lisbon\n", encoding="utf-8"
    )
    (root / "memory" / "notes.txt").write_text("ignored", encoding="utf-8")


def test_zeroclaw_workspace(run, tmp_path):
    root = tmp_path / "workspace"
    _zeroclaw(root)
    r = run("--json", "import", str(root), "--format", "zeroclaw", "--level", "PUBLIC")
    assert r.exit_code == 0 and json.loads(r.stdout) == {"imported": 3}
    got = _memories(run.db)
    assert got["user-lang"].content == "prefers Python" and got["user-lang"].category == "core"
    assert "preferences" in got["user-lang"].tags
    assert got["MEMORY:5"].content == "Likes short answers"
    daily = got["2026-02-14:3"]
    assert daily.category == "daily" and daily.created_at.isoformat().startswith("2026-02-14")


def test_zeroclaw_repeated_keys_and_empty_workspaces(run, tmp_path):
    root = tmp_path / "workspace"
    _zeroclaw(root)
    with (root / "MEMORY.md").open("a", encoding="utf-8") as out:
        out.write("- **user-lang**: prefers Rust\n")
    r = run("import", str(root), "--format", "zeroclaw", "--level", "PUBLIC")
    assert r.exit_code == 2 and "MEMORY.md line 6: key 'user-lang' repeats MEMORY.md line 4" in r.output
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run("import", str(empty), "--format", "zeroclaw", "--level", "PUBLIC").exit_code == 2
    assert _memories(run.db) == {}
