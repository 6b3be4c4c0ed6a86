"""A console restore on the Markdown store writes its file before it returns, like every other write."""

from __future__ import annotations

from pathlib import Path

from conftest import FakeClock

import stratamem as sm
from stratamem.operator import OperatorView


def test_a_restored_memory_is_in_its_file_when_restore_returns(tmp_path):
    root = tmp_path / "mem"
    # a long scan interval: nothing but the write itself may render the file
    store = sm.open_store(f"markdown://{root}?scan_interval=3600", clock=FakeClock())
    s = store.session("main")
    s.save("whale", "the blue whale is large")
    s.delete("whale")
    page = root / "main" / "PUBLIC" / "MEMORY.md"
    assert "the blue whale is large" not in (page.read_text(encoding="utf-8") if page.exists() else "")
    view = OperatorView.open(store, "RESTRICTED", "ops")
    ref = view.memories(view.query("main", status="deleted"))[0].ref
    view.restore(ref)
    assert "the blue whale is large" in page.read_text(encoding="utf-8")
    store.close()
    # and a new process reading the files sees it too (the sidecar rebuilt from them)
    (Path(root) / ".stratamem" / "index.db").unlink()
    for suffix in ("-wal", "-shm"):
        (Path(root) / ".stratamem" / f"index.db{suffix}").unlink(missing_ok=True)
    again = sm.open_store(f"markdown://{root}?scan_interval=3600", clock=FakeClock())
    assert again.session("main").get("whale").content == "the blue whale is large"
    again.close()
