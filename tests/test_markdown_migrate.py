"""``migrate`` between the Markdown store and the others, every direction, and ``export/import --format markdown``."""

from __future__ import annotations

import itertools

import pytest
from click.testing import CliRunner
from conftest import BACKENDS, FakeClock

import stratamem as sm
from stratamem.cli import cli
from stratamem.migrate import migrate, stored_languages

if "postgres" in BACKENDS:
    import pg_server


def build(url: str) -> tuple[sm.Store, dict[str, str]]:
    clock = FakeClock()
    store = sm.open_store(url, clock=clock, languages=("english", "spanish"))
    a = store.session("a", peers=("b",))
    a.save("plans", "public plans for the picnic\n## a heading inside", tags=["team", "out,doors"])
    a.save("nul", "binary-ish \x00 content \ue000 with the escape char", category="daily")
    a.save("gone", "soon soft-deleted")
    a.delete("gone")
    a.save("brief", "expires quickly", ttl=1)
    store.session("b").save("peer", "a note from b, las canciones", category="notes/odd")
    conf = store.session("a", clearance=sm.Level.CONFIDENTIAL, peers=("b",))
    conf.escalate(sm.Level.CONFIDENTIAL, "payroll reason")
    conf.save("plans", "confidential plans: the merger")
    conf.save("salary", "confidential salary figures")
    conf.delete("salary")
    conf.save("salary", "re-created after delete")
    clock.advance(5)
    return store, {"a": a.id, "conf": conf.id}


def rows(store: sm.Store) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for table, row in store.backend.dump():
        out.setdefault(table, []).append(row)
    return out


def observe(store: sm.Store, ids: dict[str, str]) -> list:
    conf = store.session("a", session_id=ids["conf"], clearance=sm.Level.CONFIDENTIAL, peers=("b",))
    out = [conf.taint]
    out.append(
        [(m.key, m.level, m.content, m.tags, m.category, m.lineage_id, m.created_at) for m in conf.list()]
    )
    out.append([(h.memory.key, h.score) for h in conf.search("plans picnic merger canción")])
    return out


def url_of(kind: str, tmp_path, name: str) -> str:
    if kind == "postgres":
        return pg_server.fresh_url(prefix="mdcopy")
    if kind == "markdown":
        return f"markdown://{tmp_path / name}"
    return str(tmp_path / f"{name}.db")


CHAINS = [("sqlite", "markdown", "sqlite"), ("markdown", "sqlite", "markdown")]
if "postgres" in BACKENDS:
    CHAINS += [("markdown", "postgres", "markdown"), ("postgres", "markdown", "postgres")]


@pytest.mark.parametrize("chain", CHAINS, ids="->".join)
def test_migrate_through_markdown_loses_nothing(tmp_path, chain):
    urls = [url_of(kind, tmp_path, f"s{i}") for i, kind in enumerate(chain)]
    source, ids = build(urls[0])
    before_view = observe(source, ids)
    before = rows(source)
    source.close()
    for src, dst in itertools.pairwise(urls):
        migrate(src, dst)
        assert stored_languages(dst) == ("english", "spanish")
    with sm.open_store(urls[-1], languages=("english", "spanish")) as final:
        after = rows(final)
        assert final.verify_audit() is None
        assert observe(final, ids) == before_view
    for table in ("sessions", "taint_events", "memories"):
        assert after[table] == before[table], table
    n = len(before["audit"])
    assert after["audit"][:n] == before["audit"]
    assert [e["operation"] for e in after["audit"][n:]][:2] == ["migrate", "migrate"]


def test_migrated_markdown_files_hold_every_live_version(tmp_path):
    source, _ = build(str(tmp_path / "src.db"))
    source.close()
    migrate(str(tmp_path / "src.db"), f"markdown://{tmp_path / 'md'}")
    text = (tmp_path / "md/a/CONFIDENTIAL/MEMORY.md").read_text()
    assert "confidential plans: the merger" in text and "re-created after delete" in text
    assert "soon soft-deleted" not in "".join(p.read_text() for p in (tmp_path / "md").rglob("*.md"))
    assert (tmp_path / "md/b/PUBLIC/notes%2Fodd.md").exists()


def test_export_and_import_markdown_from_any_backend(tmp_path):
    src = str(tmp_path / "src.db")
    build(src)[0].close()
    run = CliRunner().invoke
    out = tmp_path / "exported"
    result = run(cli, ["--db", src, "export", "--format", "markdown", "--levels", "public", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.md")) == [
        "a/PUBLIC/MEMORY.md",
        "a/PUBLIC/memory/2026-01-01.md",
        "b/PUBLIC/notes%2Fodd.md",
    ]
    # The export is a Markdown store as it stands ...
    with sm.open_store(f"markdown://{out}") as md:
        got = {m.key: m.content for m in md.session("a", peers=("b",)).list()}
    assert got["plans"] == "public plans for the picnic\n## a heading inside" and "salary" not in got
    # ... and imports back into any store, fields kept.
    dst = str(tmp_path / "dst.db")
    result = run(cli, ["--db", dst, "import", "--format", "markdown", str(out)])
    assert result.exit_code == 0, result.output
    with sm.open_store(src) as a, sm.open_store(dst) as b:

        def view(store):
            return sorted(
                (
                    m.agent_id,
                    m.key,
                    m.level,
                    m.content,
                    m.tags,
                    m.category,
                    m.lineage_id,
                    m.created_at,
                    m.updated_at,
                    m.expires_at,
                )
                for m in store.export()
                if m.level == sm.Level.PUBLIC
            )

        assert view(a) == view(b)
    assert run(cli, ["--db", src, "export", "--format", "markdown", str(out)]).exit_code == 2  # not empty


def test_import_markdown_refuses_a_bad_directory_whole(tmp_path):
    bad = tmp_path / "bad"
    (bad / "a/PUBLIC").mkdir(parents=True)
    (bad / "a/PUBLIC/MEMORY.md").write_text("## ok\n\nfine\n\n## ok\n\ntwice\n")
    (bad / "a/NOPE").mkdir()
    dst = str(tmp_path / "dst.db")
    result = CliRunner().invoke(cli, ["--db", dst, "import", "--format", "markdown", str(bad)])
    assert result.exit_code == 2
    assert "a/PUBLIC/MEMORY.md:5" in result.output and "a/NOPE" in result.output
    with sm.open_store(dst) as store:
        assert list(store.export()) == []
