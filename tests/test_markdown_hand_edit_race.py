"""Hand edits made while another process writes the Markdown store: none is lost.

One process appends sections to ``MEMORY.md`` the way a script or an editor
would (open in append mode, write, close) while another saves memories into the
same file. Every appended section must end up in the store (merged as a hand
edit) or, when it landed in the very instant of a replace, in a ``.conflict-``
copy — never in neither. Every acknowledged save must be in the store too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FakeClock

import stratamem as sm

# Appends one section per pass until the saver says it is done (a bounded number of passes);
# the short pause only keeps the file from growing faster than a person or script would edit it.
APPENDER = textwrap.dedent("""
    import os, sys, time
    path, stop, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    count = 0
    while count < limit and not os.path.exists(stop):
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"## hand-{count}\\n\\nwritten by hand {count}\\n\\n")
        count += 1
        time.sleep(0.002)
    print(count)
""")

SAVER = textwrap.dedent("""
    import sys
    import stratamem as sm
    store = sm.open_store("markdown://" + sys.argv[1] + "?scan_interval=0")
    s = store.session("main")
    for i in range(int(sys.argv[3])):
        s.save(f"saved-{i}", f"saved by the store {i}")
    store.close()
    open(sys.argv[2], "w").close()
""")


def _child(code: str, *args: str, out: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdout=subprocess.PIPE if out else None,
        text=True,
    )


def _all_keys(session: sm.Session) -> set[str]:
    keys: set[str] = set()
    cursor = None
    while True:
        page = session.list(limit=500, cursor=cursor)
        keys |= {m.key for m in page}
        if not page.next_cursor:
            return keys
        cursor = page.next_cursor


def _race(root: Path, saves: int, max_appends: int) -> None:
    store = sm.open_store(f"markdown://{root}?scan_interval=0", clock=FakeClock())
    store.session("main").save("seed", "the file exists before the race")
    store.close()
    memory_md = root / "main/PUBLIC/MEMORY.md"
    stop = root.parent / f"{root.name}-saver-done"
    appender = _child(APPENDER, str(memory_md), str(stop), str(max_appends), out=True)
    saver = _child(SAVER, str(root), str(stop), str(saves))
    assert saver.wait(timeout=300) == 0
    stop.touch()  # the appender stops even if the saver failed to say so
    appended, _ = appender.communicate(timeout=60)
    assert appender.returncode == 0
    count = int(appended)
    assert count > 0

    store = sm.open_store(f"markdown://{root}?scan_interval=0", clock=FakeClock())
    keys = _all_keys(store.session("main"))
    kept = "".join(p.read_text(encoding="utf-8") for p in memory_md.parent.glob("MEMORY.md.conflict-*"))
    lost = [i for i in range(count) if f"hand-{i}" not in keys and f"## hand-{i}\n" not in kept]
    assert lost == [], f"{len(lost)} of {count} hand-appended sections lost"
    assert {f"saved-{i}" for i in range(saves)} <= keys  # acknowledged saves
    store.close()


def test_sections_appended_by_hand_while_another_process_saves_are_never_lost(tmp_path):
    _race(tmp_path / "mem", saves=120, max_appends=400)


@pytest.mark.slow
def test_hand_edit_race_at_length(tmp_path):
    for run in range(3):
        _race(tmp_path / f"mem{run}", saves=300, max_appends=2000)


# ---------------------------------------------------------------- one edit landing inside a write, deterministically


def _edit_during_writes(monkeypatch, store: sm.Store, change) -> None:
    """Make ``change()`` happen once, after the next write's transaction and before its files are written."""
    db = store.backend.db
    done: list[bool] = []
    for name in ("save_many", "delete"):
        original = getattr(db, name)

        def wrapped(*args, _original=original, **kwargs):
            result = _original(*args, **kwargs)
            if not done:
                done.append(True)
                change()
            return result

        monkeypatch.setattr(db, name, wrapped)


def _open(root: Path) -> sm.Store:
    return sm.open_store(f"markdown://{root}?scan_interval=0", clock=FakeClock())


def test_a_section_added_by_hand_during_a_save_is_merged(tmp_path, monkeypatch):
    root = tmp_path / "mem"
    store = _open(root)
    s = store.session("main")
    s.save("first", "one")
    memory_md = root / "main/PUBLIC/MEMORY.md"

    def append() -> None:
        with open(memory_md, "a", encoding="utf-8") as f:
            f.write("## by-hand\n\nadded while the store saved\n")

    _edit_during_writes(monkeypatch, store, append)
    s.save("second", "two")
    monkeypatch.undo()
    assert s.get("by-hand").content == "added while the store saved"
    assert s.get("second").content == "two"
    text = memory_md.read_text(encoding="utf-8")
    assert "## by-hand\n" in text and "## second\n" in text
    assert not list(memory_md.parent.glob("*.conflict-*"))
    edits = [e for e in store.audit_events() if e.operation == "markdown.edit"]
    assert edits[-1].keys == ("by-hand",)  # applied as an audited hand edit
    assert store.verify_audit() is None


def test_a_delete_is_not_undone_by_a_hand_edit_landing_during_it(tmp_path, monkeypatch):
    root = tmp_path / "mem"
    store = _open(root)
    s = store.session("main")
    s.save("keep", "stays")
    s.save("gone", "deleted now")
    memory_md = root / "main/PUBLIC/MEMORY.md"

    def append() -> None:
        with open(memory_md, "a", encoding="utf-8") as f:
            f.write("## by-hand\n\nadded while the store deleted\n")

    _edit_during_writes(monkeypatch, store, append)
    s.delete("gone")
    monkeypatch.undo()
    assert s.get("gone") is None and s.get("by-hand") is not None and s.get("keep") is not None
    assert "deleted now" not in memory_md.read_text(encoding="utf-8")


def test_a_hand_edit_of_the_key_being_saved_is_kept_as_a_conflict_copy(tmp_path, monkeypatch):
    root = tmp_path / "mem"
    store = _open(root)
    s = store.session("main")
    s.save("colour", "blue")
    s.save("size", "large")
    memory_md = root / "main/PUBLIC/MEMORY.md"

    def edit() -> None:
        text = memory_md.read_text(encoding="utf-8")
        memory_md.write_text(text.replace("blue\n", "edited by hand\n").replace("large\n", "small\n"))

    _edit_during_writes(monkeypatch, store, edit)
    s.save("colour", "green")
    monkeypatch.undo()
    assert s.get("colour").content == "green"  # the acknowledged save
    assert s.get("size").content == "small"  # the rest of the hand edit, merged
    kept = list(memory_md.parent.glob("MEMORY.md.conflict-*"))
    assert len(kept) == 1 and "edited by hand" in kept[0].read_text(encoding="utf-8")
    assert any("was kept as" in p["error"] for p in store.backend.problems)


def test_two_conflict_copies_kept_in_one_microsecond_are_both_kept(tmp_path, monkeypatch):
    from datetime import UTC, datetime

    from stratamem.storage.markdown import replace

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2026, 1, 1, tzinfo=UTC)

    monkeypatch.setattr(replace, "datetime", Frozen)
    root = tmp_path / "mem"
    (root / "a").mkdir(parents=True)
    for text in ("first\n", "second\n"):
        (root / "a/MEMORY.md").write_text(text)
        replace.replace(str(root), "a/MEMORY.md", "rendered\n", "any", keep_old=True)
    kept = sorted(p.read_text() for p in (root / "a").glob("MEMORY.md.conflict-*"))
    assert kept == ["first\n", "second\n"]
