"""Importers keep when a fact happened: Mem0's ``created_at`` and a note's ``created``/``date`` become the
memory's ``occurred_at``; a note's ``title`` is its context (stored, never returned as content)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli
from stratamem.models import SituatedMemory


def _run(db: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db, *args])


def _store_view(db: str):
    store = sm.open_store(db)
    try:
        s = store.session("main")
        s.escalate(sm.Level.INTERNAL, "test")
        listed = {m.key: m for m in s.list()}
        contexts = {m.key: m.context if isinstance(m, SituatedMemory) else None for m in store.export()}
        return listed, contexts
    finally:
        store.close()


def test_mem0_facts_happened_when_mem0_created_them(tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text(
        json.dumps(
            [
                {"id": "a", "memory": "Prefers tea", "created_at": "2024-07-25T23:57:00.856Z"},
                {"id": "b", "memory": "Lives in Porto", "updated_at": "2023-01-02T03:04:05+01:00"},
            ]
        ),
        encoding="utf-8",
    )
    db = str(tmp_path / "m.db")
    assert _run(db, "import", str(path), "--format", "mem0", "--level", "PUBLIC").exit_code == 0
    listed, _ = _store_view(db)
    assert listed["mem0-a"].occurred_at == datetime(2024, 7, 25, 23, 57, 0, 856000, tzinfo=UTC)
    assert listed["mem0-b"].occurred_at == datetime(2023, 1, 2, 2, 4, 5, tzinfo=UTC)


def test_a_notes_date_is_when_it_happened_and_its_title_its_context(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    (root / "trip.md").write_text(
        "---\ntitle: Lisbon trip 2019\ndate: 2019-05-04\n---\nWe walked to Belem.\n", encoding="utf-8"
    )
    (root / "plain.md").write_text("No front matter.\n", encoding="utf-8")
    db = str(tmp_path / "n.db")
    r = _run(db, "import", str(root), "--format", "markdown-notes", "--level", "INTERNAL")
    assert r.exit_code == 0, r.output
    listed, contexts = _store_view(db)
    assert listed["trip"].occurred_at == datetime(2019, 5, 4, tzinfo=UTC)
    assert listed["trip"].content == "We walked to Belem."
    assert contexts == {"trip": "Lisbon trip 2019", "plain": None}
    assert listed["plain"].occurred_at == listed["plain"].created_at
