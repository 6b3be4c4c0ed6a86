import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

import stratamem as sm
from stratamem.cli import cli
from stratamem.transfer import dump_lines


@pytest.fixture
def run(tmp_path):
    db = str(tmp_path / "cli.db")
    sm.Store(db).close()  # read commands refuse a store that does not exist
    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(cli, ["--db", db, *args], input=input, catch_exceptions=False)

    invoke.db = db
    return invoke


def js(result):
    return json.loads(result.output)


def test_save_get_search_list_delete_json_shapes(run):
    r = run("--json", "save", "coffee", "black, no sugar", "--tag", "pref")
    assert r.exit_code == 0 and js(r) == {"saved": True, "key": "coffee", "classification": "PUBLIC"}
    got = js(run("--json", "get", "coffee"))
    assert set(got) == {"found", "key", "content", "classification", "tags", "updated_at", "occurred_at"}
    assert got["found"] is True and got["tags"] == ["pref"]
    found = js(run("--json", "search", "sugar"))
    assert found["query"] == "sugar" and [h["key"] for h in found["results"]] == ["coffee"]
    assert set(found["results"][0]) == {"key", "content", "classification", "tags", "occurred_at", "score"}
    listed = js(run("--json", "list", "--tag", "pref"))
    assert [m["key"] for m in listed["memories"]] == ["coffee"]
    assert js(run("--json", "delete", "coffee")) == {"deleted": True, "key": "coffee"}
    r = run("--json", "get", "coffee")
    assert r.exit_code == 1 and js(r) == {"found": False, "key": "coffee"}


def test_taint_levels_and_shadowing_from_the_cli(run):
    run("save", "plan", "public plan")
    r = run("--taint", "confidential", "save", "plan", "secret plan")
    assert "CONFIDENTIAL" in r.output
    assert "public plan" in run("get", "plan").output
    assert "secret plan" in run("--taint", "CONFIDENTIAL", "get", "plan").output


def test_exit_codes(run):
    assert run("get", "nothing").exit_code == 1
    assert run("delete", "nothing").exit_code == 1
    assert run("save", "", "x").exit_code == 2
    assert run("--taint", "secret", "list").exit_code == 2
    assert run("save").exit_code == 2  # usage
    r = run("--json", "save", "k", "")
    assert r.exit_code == 2 and js(r)["error"]["code"] == "VALIDATION_ERROR"
    assert run("purge", "--before", "yesterday").exit_code == 2


def test_resume_session_keeps_taint(run, tmp_path):
    import stratamem as sm

    with sm.open_store(run.db) as store:
        s = store.session("main")
        s.escalate("INTERNAL", "x")
        sid = s.id
    r = run("--json", "--session", sid, "save", "k", "v")
    assert js(r)["classification"] == "INTERNAL"


def test_export_import_round_trips_every_field(run, tmp_path):
    run("--agent", "alice", "save", "a", "public a", "--tag", "x", "--category", "daily")
    run("--agent", "alice", "--taint", "RESTRICTED", "save", "a", "restricted a")
    run("--agent", "bob", "--taint", "INTERNAL", "save", "b", "bob's b")
    out = tmp_path / "dump.jsonl"
    assert run("export", str(out)).exit_code == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(m["agent_id"], m["key"], m["level"]) for m in lines] == [
        ("alice", "a", "PUBLIC"),
        ("alice", "a", "RESTRICTED"),
        ("bob", "b", "INTERNAL"),
    ]
    other_db = str(tmp_path / "other.db")
    r = CliRunner().invoke(cli, ["--db", other_db, "import", str(out)])
    assert r.exit_code == 0 and "imported 3" in r.output
    again = CliRunner().invoke(cli, ["--db", other_db, "export"]).output
    assert [json.loads(line) for line in again.splitlines()] == lines
    assert run("audit", "verify").exit_code == 0


@pytest.mark.parametrize(
    ("mode", "flags", "embedded"),
    [("hybrid", [], True), ("hybrid", ["--no-embed"], False), ("lexical", [], False)],
)
def test_an_import_embeds_what_it_imported_when_search_by_meaning_is_on(
    tmp_path, monkeypatch, mode, flags, embedded
):
    """An import into a store that searches by meaning embeds its memories (unless --no-embed), so the
    searches after it are not the ones paying for the backlog."""
    pytest.importorskip("onnxruntime")
    dump = tmp_path / "dump.jsonl"
    with sm.open_store(str(tmp_path / "source.db"), search_mode="lexical") as source:
        source.session("main").save_many([{"key": f"k{i}", "content": f"note {i}"} for i in range(40)])
        dump.write_text("".join(dump_lines(source.export())), encoding="utf-8")
    monkeypatch.setenv("STRATAMEM_SEARCH_MODE", mode)
    target = str(tmp_path / "new.db")
    result = CliRunner().invoke(cli, ["--json", "--db", target, "import", *flags, str(dump)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"imported": 40}
    assert ("--no-embed" in result.stderr and "stratamem reindex" in result.stderr) is (
        flags == ["--no-embed"]
    )
    with sm.open_store(target, search_mode="hybrid") as store:
        events = [e.operation for e in store.audit_events()]
        assert store.semantic.embedder is not None  # recorded now if the import did not: its records wait
        waiting = store.backend.vectors.all_pending_vectors(1)[1]
    assert waiting == (0 if embedded else 40)
    assert ("reindex" in events) is embedded


def test_import_refuses_bad_lines_with_numbers_and_imports_nothing(run, tmp_path):
    good = {"key": "k", "content": "c", "level": "PUBLIC", "agent_id": "main"}
    bad_file = tmp_path / "bad.jsonl"
    bad_file.write_text(
        "\n".join(
            [
                json.dumps(good),
                "{not json",
                json.dumps({**good, "level": "TOP-SECRET"}),
                json.dumps({**good, "key": ""}),
                json.dumps({"content": "no key"}),
            ]
        )
        + "\n"
    )
    r = run("import", str(bad_file))
    assert r.exit_code == 2
    for n in (2, 3, 4, 5):
        assert f"line {n}:" in r.output
    assert "line 1:" not in r.output
    assert run("--json", "list").output.strip() == '{"memories": [], "next_cursor": null}'


def test_import_non_utf8_file_is_refused(run, tmp_path):
    f = tmp_path / "latin1.jsonl"
    f.write_bytes(b'{"key": "k", "content": "caf\xe9", "level": "PUBLIC", "agent_id": "main"}\n')
    r = run("import", str(f))
    assert r.exit_code == 2 and "line 1" in r.output and "UTF-8" in r.output


def test_audit_show_and_lineage(run):
    saved = js(run("--json", "save", "k", "v"))
    assert saved["saved"]
    r = run("--json", "audit", "show", "--limit", "0")
    events = js(r)["events"]
    lineage = next(e for e in events if e["operation"] == "save")["lineage_ids"][0]
    run("get", "k")
    readers = js(run("--json", "audit", "show", "--lineage", lineage))["events"]
    assert [e["operation"] for e in readers] == ["save", "get"]


def test_audit_verify_exit_code_on_tamper(run):
    import sqlite3

    run("save", "k", "v")
    assert run("audit", "verify").exit_code == 0
    conn = sqlite3.connect(run.db)
    conn.execute("UPDATE audit SET operation = 'forged' WHERE seq = 2")
    conn.commit()
    conn.close()
    r = run("audit", "verify")
    assert r.exit_code == 3 and "sequence 2" in r.output


def test_purge_command(run):
    run("save", "k", "v")
    run("delete", "k")
    r = run("--json", "purge", "--before", "2999-01-01T00:00:00+00:00")
    assert js(r) == {"purged": 1}


def test_real_console_script_with_non_utf8_argument(tmp_path):
    db = str(tmp_path / "x.db")
    env = {**os.environ, "STRATAMEM_DB": db}
    bad = subprocess.run(
        [sys.executable, "-m", "stratamem", "save", b"k\xff".decode("utf-8", "surrogateescape"), "v"],
        capture_output=True,
        env=env,
    )
    assert bad.returncode == 2 and b"UTF-8" in bad.stderr
    ok = subprocess.run(
        [sys.executable, "-m", "stratamem", "--json", "save", "k", "v"],
        capture_output=True,
        env=env,
        text=True,
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["saved"] is True


def test_huge_content_is_refused_cleanly(run):
    r = run("save", "big", "x" * (1024 * 1024))
    assert r.exit_code == 2 and "limit" in r.output
    assert run("get", "big").exit_code == 1


def test_demo_runs(run):
    r = CliRunner().invoke(cli, ["demo"])
    assert r.exit_code == 0 and "chain intact" in r.output
