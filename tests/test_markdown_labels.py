"""The Markdown store keeps labels as folders: ``<agent>/CONFIDENTIAL+HR/`` holds what is stored at that label."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FakeClock

import stratamem as sm
from stratamem import Level
from stratamem.cli import cli
from stratamem.labels import Label
from stratamem.storage.markdown import format as fmt

LONG = [f"COMPARTMENT_{i:02d}_" + "X" * 17 for i in range(16)]  # 32 characters each: a 540-byte label
WIDE = "CONFIDENTIAL+" + "+".join(LONG)
SECTION = "## {key}\n\n- category: core\n\n{content}\n\n"


def open_md(path: Path) -> sm.Store:
    store = sm.open_store(f"markdown://{path}?scan_interval=0", clock=FakeClock())
    store.define_compartments("HR", "FINANCE")
    return store


def at(store: sm.Store, label: str, agent: str = "main") -> sm.Session:
    """A session of ``agent`` whose taint is ``label`` (cleared for it, compartments entered)."""
    wanted = Label.parse(label)
    session = store.session(agent, clearance=label)
    for name in sorted(wanted.compartments):
        session.enter(name, "need to know")
    if wanted.level > Level.PUBLIC:
        session.escalate(wanted.level, "work at this level")
    assert session.label == wanted
    return session


def seen(session: sm.Session) -> dict[str, set[str]]:
    """What one session reads of the store, by each read path."""
    return {
        "get": {k for k in ("salary", "budget", "notes", "plain") if session.get(k) is not None},
        "list": {m.key for m in session.list()},
        "search": {h.memory.key for h in session.search("figures")},
    }


def markdown_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md") if ".stratamem" not in p.parts)


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "mem"


def test_a_compartmented_save_lands_in_its_label_folder(root):
    store = open_md(root)
    at(store, "CONFIDENTIAL+HR").save("salary", "salary figures")
    at(store, "CONFIDENTIAL+FINANCE+HR").save("budget", "budget figures", category="plans")
    at(store, "CONFIDENTIAL").save("plain", "plain figures")
    assert markdown_files(root) == [
        "main/CONFIDENTIAL+FINANCE+HR/plans.md",
        "main/CONFIDENTIAL+HR/MEMORY.md",
        "main/CONFIDENTIAL/MEMORY.md",
    ]
    text = (root / "main/CONFIDENTIAL+HR/MEMORY.md").read_text()
    assert text.startswith("# main · CONFIDENTIAL+HR · core") and "salary figures" in text
    assert "salary" not in (root / "main/CONFIDENTIAL/MEMORY.md").read_text()
    store.close()
    # Reopened (a scan compares every file with the sidecar): the labels are unchanged, nothing is rewritten.
    store = open_md(root)
    got = at(store, "CONFIDENTIAL+FINANCE+HR").get("salary")
    assert got is not None and got.compartments == {"HR"} and got.level == Level.CONFIDENTIAL
    assert store.backend.problems == []
    assert not [e for e in store.audit_events() if e.operation.startswith("markdown.")]


def test_a_session_outside_the_compartment_does_not_see_it(root):
    store = open_md(root)
    at(store, "CONFIDENTIAL+HR").save("salary", "salary figures")
    at(store, "CONFIDENTIAL+FINANCE").save("budget", "budget figures")
    nothing: dict[str, set[str]] = {"get": set(), "list": set(), "search": set()}
    assert seen(at(store, "CONFIDENTIAL+FINANCE")) == {k: {"budget"} for k in nothing}
    assert seen(at(store, "RESTRICTED")) == nothing
    assert seen(at(store, "INTERNAL+HR")) == nothing
    assert seen(at(store, "RESTRICTED+HR")) == {k: {"salary"} for k in nothing}


def test_a_hand_written_file_in_a_label_folder_is_read_at_that_label(root):
    store = open_md(root)
    at(store, "CONFIDENTIAL+HR").save("salary", "salary figures")
    folder = root / "main/CONFIDENTIAL+HR"
    (folder / "notes.md").write_text(SECTION.format(key="notes", content="interview figures"))
    text = (folder / "MEMORY.md").read_text()
    (folder / "MEMORY.md").write_text(text.replace("salary figures", "salary figures, revised"))
    assert store.backend.rescan() == []
    hr = at(store, "CONFIDENTIAL+HR")
    notes, salary = hr.get("notes"), hr.get("salary")
    assert (
        notes is not None
        and notes.content == "interview figures"
        and notes.label == Label.parse("CONFIDENTIAL+HR")
    )
    assert (
        salary is not None and salary.content == "salary figures, revised" and salary.compartments == {"HR"}
    )
    assert seen(at(store, "CONFIDENTIAL+FINANCE")) == {"get": set(), "list": set(), "search": set()}
    assert seen(at(store, "RESTRICTED")) == {"get": set(), "list": set(), "search": set()}
    edits = {e.detail["file"]: e for e in store.audit_events() if e.operation == "markdown.edit"}
    assert set(edits) == {"main/CONFIDENTIAL+HR/notes.md", "main/CONFIDENTIAL+HR/MEMORY.md"}
    assert all(e.session_id is None and e.levels == (Level.CONFIDENTIAL,) for e in edits.values())
    # Moving a section by hand to another label folder moves the memory to that label (audited).
    hr.save("plain", "will be declassified from HR")
    store.backend.rescan()
    section = (folder / "MEMORY.md").read_text().split("## plain")[1]
    (folder / "MEMORY.md").write_text((folder / "MEMORY.md").read_text().replace("## plain" + section, ""))
    (root / "main/CONFIDENTIAL").mkdir()
    (root / "main/CONFIDENTIAL/MEMORY.md").write_text("## plain" + section)
    assert store.backend.rescan() == []
    moved = at(store, "CONFIDENTIAL").get("plain")
    assert moved is not None and moved.compartments == frozenset()
    assert any(e.operation == "markdown.move" for e in store.audit_events())


@pytest.mark.parametrize(
    ("folder", "says"),
    [
        ("CONFIDENTIAL+NOPE", "unknown compartment 'NOPE'"),
        ("CONFIDENTIAL+..", "no separators, no '..'"),
        ("CONFIDENTIAL+hr", "must be spelt 'CONFIDENTIAL+HR'"),
        ("CONFIDENTIAL+HR+FINANCE", "must be spelt 'CONFIDENTIAL+FINANCE+HR'"),
        ("CONFIDENTIAL+", "not a label"),
        ("CONFIDENTIAL+H R", "not a label"),
        ("CONFIDENTIAL+\uff28R", "ASCII"),
        ("SECRET+HR", "unknown level folder"),
        ("CONFIDENTIAL+" + "+".join(f"C{i}" for i in range(17)), "at most 16 compartments"),
    ],
)
def test_a_folder_that_is_not_a_defined_label_is_refused_and_nothing_written(root, folder, says):
    store = open_md(root)
    store.define_compartments(*(f"C{i}" for i in range(17)))
    at(store, "CONFIDENTIAL+HR").save("salary", "salary figures")
    before = list(store.export())
    (root / "main" / folder).mkdir()
    (root / "main" / folder / "MEMORY.md").write_text(
        SECTION.format(key="smuggled", content="smuggled figures")
    )
    problems = store.backend.rescan()
    assert [(p["file"], p["line"]) for p in problems] == [(f"main/{folder}", None)]
    assert says in problems[0]["error"]
    assert list(store.export()) == before
    assert "NOPE" not in store.compartments.current(fresh=True)  # a folder defines nothing
    assert store.backend.rescan() == []  # reported once
    errors = [e for e in store.audit_events() if e.operation == "markdown.error"]
    assert [e.detail["file"] for e in errors] == [f"main/{folder}"]
    # A write later renders only its own files: the refused folder is left exactly as it was.
    at(store, "CONFIDENTIAL+HR").save("salary", "salary figures again")
    assert (root / "main" / folder / "MEMORY.md").read_text().startswith("## smuggled")
    assert "smuggled" not in {m.key for m in store.export()}


def test_a_folder_of_a_compartment_defined_later_is_read_then(root):
    store = open_md(root)
    (root / "main/INTERNAL+LEGAL").mkdir(parents=True)
    (root / "main/INTERNAL+LEGAL/MEMORY.md").write_text(SECTION.format(key="case", content="the case"))
    assert "unknown compartment 'LEGAL'" in store.backend.rescan()[0]["error"]
    store.define_compartments("LEGAL")
    assert store.backend.rescan() == []
    got = at(store, "INTERNAL+LEGAL").get("case")
    assert got is not None and got.compartments == {"LEGAL"}
    assert at(store, "RESTRICTED+HR").get("case") is None


def test_a_label_folder_is_checked_before_it_becomes_a_path():
    assert fmt.label_folder("CONFIDENTIAL+FINANCE+HR") == Label.parse("CONFIDENTIAL+HR+FINANCE")
    for bad in ["CONFIDENTIAL+../x", "..", "PUBLIC+A/B", "PUBLIC+A\\B", "PUBLIC+A\x00", "PUBLIC+\u0130"]:
        with pytest.raises(sm.ValidationError):
            fmt.label_folder(bad)
    forged = Label(Level.PUBLIC, frozenset({"../../etc"}))  # a Label built around the name checks
    with pytest.raises(sm.ValidationError):
        fmt.file_for("main", forged, "core", FakeClock()())
    assert fmt.file_for("main", Label.parse("PUBLIC+B+A"), "daily", FakeClock()()).startswith(
        "main/PUBLIC+A+B/"
    )


def test_export_and_import_markdown_keep_labels(tmp_path):
    src = str(tmp_path / "src.db")
    with sm.open_store(src, clock=FakeClock()) as store:
        store.define_compartments("HR", "FINANCE")
        at(store, "CONFIDENTIAL+HR").save("salary", "salary figures")
        at(store, "INTERNAL+FINANCE+HR").save("budget", "budget figures", category="daily")
        at(store, "CONFIDENTIAL").save("plain", "plain figures")
        store.define_compartments(*LONG)
        at(store, WIDE).save("wide", "wide figures")
    out = tmp_path / "exported"
    run = CliRunner().invoke
    result = run(cli, ["--db", src, "export", "--format", "markdown", str(out)])
    assert result.exit_code == 0, result.output
    assert markdown_files(out) == [
        "main/CONFIDENTIAL+HR/MEMORY.md",
        "main/CONFIDENTIAL/MEMORY.md",
        "main/INTERNAL+FINANCE+HR/memory/2026-01-01.md",
        f"main/{fmt.folder_of(Label.parse(WIDE))}/MEMORY.md",
    ]
    # Into a store that does not define the compartments: refused whole, naming the folders.
    bare = str(tmp_path / "bare.db")
    result = run(cli, ["--db", bare, "import", "--format", "markdown", str(out)])
    assert result.exit_code == 2
    assert "main/CONFIDENTIAL+HR: label folder not imported" in result.output
    assert "main/INTERNAL+FINANCE+HR" in result.output
    with sm.open_store(bare) as store:
        assert list(store.export()) == []
    # Into a store that defines them (other bits: FINANCE first): every memory at its label.
    dst = str(tmp_path / "dst.db")
    with sm.open_store(dst) as store:
        store.define_compartments("FINANCE", *reversed(LONG), "HR")
    result = run(cli, ["--db", dst, "import", "--format", "markdown", str(out)])
    assert result.exit_code == 0, result.output

    def labels(url: str) -> dict[str, str]:
        with sm.open_store(url) as store:
            return {m.key: store.compartments.named(m).label.name for m in store.export()}

    want = {
        "salary": "CONFIDENTIAL+HR",
        "budget": "INTERNAL+FINANCE+HR",
        "plain": "CONFIDENTIAL",
        "wide": WIDE,
    }
    assert labels(src) == labels(dst) == want
    with sm.open_store(dst) as store:
        assert seen(at(store, "RESTRICTED+FINANCE"))["list"] == {"plain"}
        assert seen(at(store, "RESTRICTED+HR"))["list"] == {"plain", "salary"}
    # The exported folder opens as a Markdown store at the same labels.
    with sm.open_store(f"markdown://{out}?scan_interval=0") as md:
        assert "unknown compartment" in md.backend.problems[0]["error"]
        md.define_compartments("HR", "FINANCE", *LONG)
        md.backend.rescan()
        assert {m.key: md.compartments.named(m).label.name for m in md.export()} == want


def test_a_label_too_long_for_a_folder_name_gets_a_long_folder_naming_it(root):
    store = open_md(root)
    store.define_compartments(*LONG)
    label = "CONFIDENTIAL+" + "+".join(LONG)
    at(store, label).save("wide", "wide figures")
    [path] = markdown_files(root)
    folder = path.split("/")[1]
    assert fmt.is_long_label(folder) and path == f"main/{folder}/MEMORY.md"
    assert (root / "main" / folder / ".label").read_text() == label + "\n"
    # A hand edit there is read at that label; a session lacking one of its compartments does not see it.
    (root / "main" / folder / "notes.md").write_text(SECTION.format(key="notes", content="more figures"))
    assert store.backend.rescan() == []
    got = at(store, label).get("notes")
    assert got is not None and got.label == Label.parse(label)
    assert at(store, "RESTRICTED+" + "+".join(LONG[:15])).get("notes") is None
    store.close()
    store = open_md(root)
    assert {m.key for m in at(store, label).list()} == {"wide", "notes"} and store.backend.problems == []


@pytest.mark.parametrize("named", [None, "CONFIDENTIAL+HR", "CONFIDENTIAL+" + "+".join(LONG[:15]) + "+HR"])
def test_a_long_label_folder_without_its_own_label_file_is_refused(root, named):
    store = open_md(root)
    store.define_compartments(*LONG)
    folder = fmt.folder_of(Label.parse("CONFIDENTIAL+" + "+".join(LONG)))
    (root / "main" / folder).mkdir(parents=True)
    (root / "main" / folder / "MEMORY.md").write_text(SECTION.format(key="smuggled", content="x"))
    if named is not None:
        (root / "main" / folder / ".label").write_text(named + "\n")
    problems = store.backend.rescan()
    assert [p["file"] for p in problems] == [f"main/{folder}"]
    assert ".label" in problems[0]["error"]
    assert list(store.export()) == []
