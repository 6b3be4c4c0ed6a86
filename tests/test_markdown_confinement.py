"""Nothing the Markdown store opens or creates resolves outside its directory.

The sidecar (``.stratamem/index.db``) holds the content of every level, so a
link planted for it — the folder, the database, SQLite's ``-wal``/``-shm``/
``-journal`` companions or the lock — must be refused, not followed; a memory
file with a second hard link (which may lie outside) is never read as a memory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import FakeClock

import stratamem as sm
from stratamem import Level
from stratamem.md_transfer import read_markdown
from stratamem.migrate import stored_languages

SECRET = "the merger closes on friday"
SIDECAR_FILES = ["index.db", "index.db-wal", "index.db-shm", "index.db-journal", "lock"]


def open_md(root: Path) -> sm.Store:
    return sm.open_store(f"markdown://{root}?scan_interval=0", clock=FakeClock())


def seed(root: Path) -> None:
    store = open_md(root)
    s = store.session("main", clearance=Level.RESTRICTED)
    s.save("colour", "blue")
    s.escalate(Level.RESTRICTED, "x")
    s.save("deal", SECRET)
    store.close()


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under ``folder`` with its bytes (links by their target), to show nothing changed."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            found[rel] = path.read_bytes()
        else:
            found[rel] = "dir"
    return found


def plant(link: Path, kind: str, outside: Path, *, directory: bool = False) -> None:
    target = outside / "planted"
    if kind == "symlink":
        target.mkdir() if directory else target.write_bytes(b"")
        link.symlink_to(target)
    elif kind == "dangling":
        link.symlink_to(target)
    elif kind == "hardlink":
        target.write_bytes(b"")
        os.link(target, link)
    elif kind == "fifo":
        os.mkfifo(link)
    else:
        link.write_bytes(b"")


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("kind", ["symlink", "dangling", "fifo", "file"])
def test_a_sidecar_folder_that_is_not_a_folder_of_the_store_is_refused(tmp_path, outside, kind):
    root = tmp_path / "mem"
    root.mkdir()
    plant(root / ".stratamem", kind, outside, directory=True)
    before = snapshot(outside)
    with pytest.raises(sm.StorageError, match=r"refusing .*\.stratamem: .*outside its directory"):
        open_md(root)
    assert snapshot(outside) == before


@pytest.mark.parametrize("name", SIDECAR_FILES)
@pytest.mark.parametrize("kind", ["symlink", "dangling", "hardlink", "fifo"])
def test_a_sidecar_file_that_is_not_the_stores_own_is_refused(tmp_path, outside, name, kind):
    root = tmp_path / "mem"
    (root / ".stratamem").mkdir(parents=True)
    plant(root / ".stratamem" / name, kind, outside)
    before = snapshot(outside)
    with pytest.raises(sm.StorageError, match=rf"refusing .*{name}: "):
        open_md(root)
    assert snapshot(outside) == before


@pytest.mark.parametrize("name", ["index.db", "lock"])
def test_an_existing_store_whose_sidecar_file_gains_a_hard_link_is_refused(tmp_path, outside, name):
    root = tmp_path / "mem"
    seed(root)
    os.link(root / ".stratamem" / name, outside / "copy")
    with pytest.raises(sm.StorageError, match=rf"refusing .*{name}: it has other hard links"):
        open_md(root)


def test_a_sidecar_folder_swapped_for_a_link_while_open_stops_every_write(tmp_path, outside):
    root = tmp_path / "mem"
    store = open_md(root)
    s = store.session("main", clearance=Level.RESTRICTED)
    s.save("colour", "blue")
    s.escalate(Level.RESTRICTED, "x")
    (root / ".stratamem").rename(outside / "moved")
    (root / ".stratamem").symlink_to(outside / "moved")
    with pytest.raises(sm.StorageError, match="replaced while the store was open"):
        s.save("deal", SECRET)
    store.backend.db.close()  # the folder it was opened in, wherever it is now
    assert all(SECRET.encode() not in v for v in snapshot(outside).values() if isinstance(v, bytes))


def test_a_hard_linked_memory_file_is_not_read(tmp_path, outside):
    root = tmp_path / "mem"
    seed(root)
    elsewhere = outside / "notes.md"
    elsewhere.write_text("## stolen\n\nread from outside the store\n")
    os.link(elsewhere, root / "main/PUBLIC/projects.md")
    os.link(elsewhere, root / "main/PUBLIC/MEMORY.md.tmp")  # not a memory file name: ignored
    store = open_md(root)
    s = store.session("main")
    assert s.search("stolen outside") == [] and s.get("stolen") is None
    problem = next(p for p in store.backend.problems if p["file"] == "main/PUBLIC/projects.md")
    assert "other hard links" in problem["error"]
    store.close()
    assert elsewhere.read_text() == "## stolen\n\nread from outside the store\n"


def test_an_import_from_a_folder_with_a_hard_linked_file_refuses_it(tmp_path, outside):
    folder = tmp_path / "export"
    (folder / "main/PUBLIC").mkdir(parents=True)
    elsewhere = outside / "notes.md"
    elsewhere.write_text("## stolen\n\nread from outside\n")
    os.link(elsewhere, folder / "main/PUBLIC/MEMORY.md")
    with pytest.raises(sm.ValidationError, match="other hard links"):
        read_markdown(str(folder), 64 * 1024, FakeClock()())


def test_migrate_reads_no_languages_through_a_linked_sidecar(tmp_path, outside):
    real = tmp_path / "real"
    seed(real)
    root = tmp_path / "mem"
    root.mkdir()
    (root / ".stratamem").symlink_to(real / ".stratamem")
    with pytest.raises(sm.StorageError, match="refusing"):
        stored_languages(f"markdown://{root}")
