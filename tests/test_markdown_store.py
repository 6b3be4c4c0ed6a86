"""The Markdown store: files people edit, hand edits audited, bad input refused, crashes and races survived."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FakeClock

import stratamem as sm
from stratamem import Level


def open_md(path: Path, **options) -> sm.Store:
    options.setdefault("clock", FakeClock())
    return sm.open_store(f"markdown://{path}?scan_interval=0", **options)


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "mem"


def seed(root: Path) -> tuple[sm.Store, sm.Session]:
    store = open_md(root)
    s = store.session("main")
    s.save("colour", "blue\n## looks like a heading", tags=["pref"])
    s.save("today", "went running", category="daily")
    s.save("plan", "a plan", category="projects")
    return store, s


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_layout_and_modes(root):
    store, s = seed(root)
    s.escalate(Level.CONFIDENTIAL, "x")
    s.save("secret", "the merger")
    store.close()
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*.md"))
    assert files == [
        "main/CONFIDENTIAL/MEMORY.md",
        "main/PUBLIC/MEMORY.md",
        "main/PUBLIC/memory/2026-01-01.md",
        "main/PUBLIC/projects.md",
    ]
    for p in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), p
    text = (root / "main/PUBLIC/MEMORY.md").read_text()
    assert "## colour\n" in text and "- tags: pref\n" in text and "\\## looks like a heading" in text


def test_hand_edit_is_applied_and_audited(root):
    store, s = seed(root)
    lineage = s.get("colour").lineage_id
    edit(root / "main/PUBLIC/MEMORY.md", "blue\n", "green\n")
    got = s.get("colour")
    assert got.content == "green\n## looks like a heading" and got.lineage_id == lineage
    assert s.search("green")[0].memory.key == "colour"
    event = [e for e in store.audit_events() if e.operation == "markdown.edit"][-1]
    assert event.detail == {"file": "main/PUBLIC/MEMORY.md", "saved": 1, "deleted": 0}
    assert event.keys == ("colour",) and "green" not in str(event)
    assert store.verify_audit() is None


def test_sections_added_and_removed_by_hand(root):
    store, s = seed(root)
    with open(root / "main/PUBLIC/projects.md", "a", encoding="utf-8") as f:
        f.write("## idea\n\nwrite a book\n")
    assert s.get("idea").content == "write a book" and s.get("idea").category == "projects"
    text = (root / "main/PUBLIC/projects.md").read_text()
    start = text.index("## plan")
    end = text.find("\n## ", start)
    (root / "main/PUBLIC/projects.md").write_text(text[:start] + (text[end + 1 :] if end >= 0 else ""))
    assert s.get("plan") is None and s.get("idea") is not None
    assert [e for e in store.audit_events() if e.operation == "markdown.edit"][-1].detail["deleted"] == 1


def test_moving_a_section_to_another_level_folder_changes_its_level(root):
    store, s = seed(root)
    text = (root / "main/PUBLIC/projects.md").read_text()
    (root / "main/INTERNAL").mkdir(mode=0o700)
    (root / "main/INTERNAL/projects.md").write_text(text)
    (root / "main/PUBLIC/projects.md").unlink()
    assert s.get("plan") is None  # PUBLIC session: the memory is above it now
    s.escalate(Level.INTERNAL, "x")
    moved = s.get("plan")
    assert moved.level == Level.INTERNAL and moved.content == "a plan"
    event = [e for e in store.audit_events() if e.operation == "markdown.move"][-1]
    assert (
        event.levels == (Level.PUBLIC, Level.INTERNAL) and event.detail["to"] == "main/INTERNAL/projects.md"
    )
    assert not (root / "main/PUBLIC/projects.md").exists()


def test_malformed_edit_is_reported_with_its_line_and_changes_nothing(root):
    store, s = seed(root)
    path = root / "main/PUBLIC/MEMORY.md"
    edit(path, "- created: ", "- created: yesterday ")
    assert s.get("colour").content.startswith("blue")
    problem = store.backend.problems[-1]
    assert (
        problem["file"] == "main/PUBLIC/MEMORY.md" and problem["line"] == 9 and "ISO 8601" in problem["error"]
    )
    assert [e.operation for e in store.audit_events()].count("markdown.error") == 1
    # A save into the same file keeps the unread hand edit beside it, never over it.
    s.save("other", "x")
    kept = [p for p in path.parent.iterdir() if ".conflict-" in p.name]
    assert len(kept) == 1 and "yesterday" in kept[0].read_text()
    assert s.get("colour").content.startswith("blue") and "## other" in path.read_text()


def test_duplicate_key_in_one_level_is_refused(root):
    store, s = seed(root)
    with open(root / "main/PUBLIC/projects.md", "a", encoding="utf-8") as f:
        f.write("## colour\n\nred\n")
    assert s.get("colour").content.startswith("blue")
    assert s.get("plan").content == "a plan"
    problem = store.backend.problems[-1]
    assert (
        problem["file"] == "main/PUBLIC/projects.md" and "also in main/PUBLIC/MEMORY.md" in problem["error"]
    )


def test_bad_folders_links_encodings_and_sizes_are_refused(root, tmp_path):
    store, s = seed(root)
    outside = tmp_path / "outside.md"
    outside.write_text("## stolen\n\nsecret from elsewhere\n")
    (root / "main/SECRET").mkdir()
    (root / "main/SECRET/MEMORY.md").write_text("## x\n\ny\n")
    (root / "main/PUBLIC/linked.md").symlink_to(outside)
    (root / "main/INTERNAL").mkdir()
    (root / "main/INTERNAL/MEMORY.md").write_bytes(b"## k\n\nline\n\xff\xfe bad\n")
    (root / "main/PUBLIC/huge.md").write_text("## big\n\n" + "x" * 2000 + "\n")
    store.close()
    store = sm.open_store(f"markdown://{root}?scan_interval=0&max_file_bytes=1000", clock=FakeClock())
    s = store.session("main", clearance=Level.RESTRICTED)
    s.escalate(Level.RESTRICTED, "see all")
    assert {m.key for m in s.list()} == {"colour", "today", "plan"}
    assert s.search("secret stolen elsewhere") == []
    problems = {(p["file"], p["line"]): p["error"] for p in store.backend.problems}
    assert "unknown level folder" in problems[("main/SECRET", None)]
    assert "symbolic link refused" in problems[("main/PUBLIC/linked.md", None)]
    assert "not UTF-8" in problems[("main/INTERNAL/MEMORY.md", 4)]
    assert "limit is 1000" in problems[("main/PUBLIC/huge.md", None)]


def test_a_file_deleted_while_open_is_written_back(root):
    store, s = seed(root)
    (root / "main/PUBLIC/projects.md").unlink()
    assert s.get("plan").content == "a plan"
    assert (root / "main/PUBLIC/projects.md").exists()
    assert "removed while the store was open" in store.backend.problems[-1]["error"]


def test_sidecar_is_rebuilt_from_the_files(root):
    store, s = seed(root)
    before = {m.key: (m.content, m.lineage_id, m.created_at, m.tags, m.category) for m in s.list()}
    store.close()
    shutil.rmtree(root / ".stratamem")
    store = open_md(root)
    after = {
        m.key: (m.content, m.lineage_id, m.created_at, m.tags, m.category)
        for m in store.session("main").list()
    }
    assert after == before
    assert store.verify_audit() is None


CHILD = textwrap.dedent("""
    import os, sys
    import stratamem as sm
    from stratamem.storage.markdown import backend as markdown
    store = sm.open_store("markdown://" + sys.argv[1])
    if sys.argv[2] == "crash":
        markdown._Writing.__exit__ = lambda self, *exc: os._exit(9)  # killed after the commit, before the files
        store.session("main").save("after-crash", "saved just before the kill")
    else:
        s = store.session(sys.argv[2])
        for i in range(int(sys.argv[3])):
            s.save(f"{sys.argv[2]}-{i}", f"note {i}")
""")


def run_child(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-c", CHILD, *args], env=env)


def test_a_kill_between_index_and_files_is_finished_at_next_open(root):
    seed(root)[0].close()
    assert run_child(str(root), "crash").wait() == 9
    assert "after-crash" not in (root / "main/PUBLIC/MEMORY.md").read_text()
    store = open_md(root)
    assert "## after-crash" in (root / "main/PUBLIC/MEMORY.md").read_text()
    assert store.session("main").get("after-crash").content == "saved just before the kill"
    assert not any(
        e.operation == "markdown.edit" for e in store.audit_events()
    )  # not mistaken for a hand edit


def test_concurrent_processes_lose_nothing(root):
    seed(root)[0].close()
    children = [run_child(str(root), agent, "15") for agent in ("p1", "p2", "p3")]
    assert [c.wait() for c in children] == [0, 0, 0]
    store = open_md(root)
    for agent in ("p1", "p2", "p3"):
        assert len(store.session(agent).list()) == 15
        text = (root / agent / "PUBLIC/MEMORY.md").read_text()
        assert all(f"## {agent}-{i}\n" in text for i in range(15))
    assert store.verify_audit() is None


def test_purge_removes_expired_content_from_the_files(root):
    clock = FakeClock()
    store = open_md(root, clock=clock)
    s = store.session("main")
    s.save("brief", "short lived words", ttl=1)
    s.save("gone", "deleted words")
    s.delete("gone")
    text = (root / "main/PUBLIC/MEMORY.md").read_text()
    assert "short lived words" in text and "deleted words" not in text
    clock.advance(10)
    assert store.purge(before=clock.now) == 2
    assert not (root / "main/PUBLIC/MEMORY.md").exists()
    for path in root.rglob("*"):
        if path.is_file():
            assert b"short lived words" not in path.read_bytes(), path


def test_bad_urls_fail_clearly(root):
    with pytest.raises(sm.ValidationError, match="unknown markdown store option"):
        sm.open_store(f"markdown://{root}?colour=1")
    with pytest.raises(sm.ValidationError, match="names a directory"):
        sm.open_store("markdown://")
