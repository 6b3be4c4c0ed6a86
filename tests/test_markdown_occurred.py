"""The Markdown store's files carry ``- occurred:`` (when it differs from ``created``) and ``- context:``;
hand edits of either are applied, and a bad value is reported with its line, changing nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from conftest import FakeClock

import stratamem as sm
from stratamem.models import SituatedMemory


def open_md(path: Path) -> sm.Store:
    return sm.open_store(f"markdown://{path}?scan_interval=0", clock=FakeClock())


def _contexts(store: sm.Store) -> dict[str, str | None]:
    return {m.key: (m.context if isinstance(m, SituatedMemory) else None) for m in store.export()}


def test_sections_render_and_read_back_occurred_and_context(tmp_path):
    root = tmp_path / "mem"
    store = open_md(root)
    s = store.session("main")
    s.save(
        "trip",
        "we walked to Belem",
        occurred_at=datetime(2019, 5, 4, tzinfo=UTC),
        context="Lisbon, line one\nline two",
    )
    s.save("plain", "nothing special")
    store.close()
    text = (root / "main/PUBLIC/MEMORY.md").read_text(encoding="utf-8")
    assert "- occurred: 2019-05-04T00:00:00.000000+00:00\n" in text
    assert '- context: "Lisbon, line one\\nline two"\n' in text
    plain = text[text.index("## plain") :]
    assert "- occurred:" not in plain.split("\n\n")[1] and "- context:" not in plain.split("\n\n")[1]

    again = open_md(root)
    t = again.session("main")
    assert t.get("trip").occurred_at == datetime(2019, 5, 4, tzinfo=UTC)
    assert _contexts(again) == {"plain": None, "trip": "Lisbon, line one\nline two"}
    path = root / "main/PUBLIC/MEMORY.md"
    text = path.read_text(encoding="utf-8")
    text = text.replace("2019-05-04T00:00:00.000000+00:00", "2018-01-01T00:00:00+00:00")
    text = text.replace('"Lisbon, line one\\nline two"', "edited by hand")
    path.write_text(text, encoding="utf-8")
    assert t.get("trip").occurred_at == datetime(2018, 1, 1, tzinfo=UTC)
    assert _contexts(again)["trip"] == "edited by hand"
    path.write_text(text.replace("- context: edited by hand", "- context: " + "x" * 2001), encoding="utf-8")
    assert t.get("trip").occurred_at == datetime(2018, 1, 1, tzinfo=UTC)  # the bad file changed nothing
    assert _contexts(again)["trip"] == "edited by hand"
    again.close()
