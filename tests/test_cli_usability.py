"""The CLI as a new user meets it: version, options after the command, stdin, extras, config."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

import stratamem
from stratamem.cli import cli


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATAMEM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("STRATAMEM_DB", raising=False)
    db = str(tmp_path / "cli.db")
    stratamem.Store(db).close()  # read commands refuse a store that does not exist

    def invoke(*args, input=None, with_db=True):
        return CliRunner().invoke(
            cli, [*(["--db", db] if with_db else []), *args], input=input, catch_exceptions=False
        )

    invoke.db = db
    return invoke


def test_version_matches_package_metadata(run):
    from importlib.metadata import version

    assert stratamem.__version__ == version("stratamem")
    r = run("--version", with_db=False)
    assert r.exit_code == 0 and r.output.strip() == f"stratamem {stratamem.__version__}"


def test_global_options_after_the_command(run, tmp_path):
    other = str(tmp_path / "other.db")
    r = run("save", "k", "v", "--json", "--agent", "a1", "--taint", "INTERNAL", "--db", other, with_db=False)
    assert r.exit_code == 0 and json.loads(r.output)["classification"] == "INTERNAL"
    got = json.loads(
        run("get", "k", "--json", "--db", other, "--taint", "INTERNAL", "--agent", "a1", with_db=False).output
    )
    assert got["found"] is True and got["content"] == "v"
    assert json.loads(run("get", "k", "--json", "--agent", "a1").output)["found"] is False  # the other store
    # the later value wins; nested groups take them too
    assert json.loads(
        run(
            "--db",
            run.db,
            "list",
            "--json",
            "--db",
            other,
            "--agent",
            "a1",
            "--taint",
            "INTERNAL",
            with_db=False,
        ).output
    )["memories"]
    r = run("audit", "show", "--json", "--limit", "1", "--db", other, with_db=False)
    assert r.exit_code == 0 and isinstance(json.loads(r.output), dict)


def test_session_after_the_command_resumes(run):
    sid = "resume-me-1"
    assert run("--session", sid, "--taint", "CONFIDENTIAL", "save", "x", "secret").exit_code == 0
    r = run("get", "x", "--session", sid, "--json")
    assert json.loads(r.output)["classification"] == "CONFIDENTIAL"


def test_dash_reads_content_from_stdin(run):
    body = "line one\nline two: ünïcode\n"
    assert run("save", "note", "-", input=body).exit_code == 0
    assert json.loads(run("--json", "get", "note").output)["content"] == "line one\nline two: ünïcode"
    assert run("save", "literal", "--", "plain").exit_code == 0


def test_dash_stdin_bad_bytes_are_a_clear_error(run):
    r = CliRunner().invoke(cli, ["--db", run.db, "save", "bad", "-"], input=b"ok \xff\xfe no")
    assert r.exit_code == 2 and "Traceback" not in r.output
    r = run("save", "empty", "-", input="")
    assert r.exit_code == 2


@pytest.mark.parametrize("argv", [["list"], ["migrate", "--from", "postgresql://u:pw@h/db", "--to", "{db}"]])
def test_postgres_url_without_the_extra_names_the_install(run, monkeypatch, argv):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the postgres extra were not installed
    argv = [a.replace("{db}", run.db) for a in argv]
    db = [] if argv[0] == "migrate" else ["--db", "postgresql://u:pw@localhost/db"]
    r = CliRunner().invoke(cli, [*db, "--json", *argv])
    assert r.exit_code == 2, r.output
    error = json.loads(r.output)["error"]
    assert error["code"] == "VALIDATION_ERROR" and "install stratamem[postgres]" in error["message"]
    assert "pw" not in r.output


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_serving_without_the_extra_names_the_install(run, monkeypatch, command):
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    r = CliRunner().invoke(cli, ["--db", run.db, command])
    assert r.exit_code == 2 and "install stratamem[server]" in r.output
    assert not isinstance(r.exception, ModuleNotFoundError)


def test_config_prints_paths_and_a_ready_mcp_snippet(run, tmp_path):
    r = run("config", "--json", with_db=False)
    info = json.loads(r.output)
    expected = str((tmp_path / "home" / "memory.db").absolute())
    assert info["db"] == expected and info["version"] == stratamem.__version__
    assert info["server_token"] == str((tmp_path / "home" / "server-token").absolute())
    server = info["mcp"]["mcpServers"]["stratamem"]
    assert server["command"] == sys.executable
    assert server["args"] == ["-m", "stratamem", "--db", expected, "mcp"]
    human = run("config", "--db", "relative.db", with_db=False).output
    assert '"mcpServers"' in human and "relative.db" in human


def test_config_snippet_hides_a_postgres_password(run):
    r = run("config", "--json", "--db", "postgresql://me:hunter2@db.example/x", with_db=False)
    assert r.exit_code == 0 and "hunter2" not in r.output and "***" in r.output


def test_config_snippet_command_runs_this_install(run):
    """The snippet's command is this interpreter with -m stratamem: it works without PATH."""
    server = json.loads(run("config", "--json").output)["mcp"]["mcpServers"]["stratamem"]
    done = subprocess.run(
        [server["command"], *server["args"][:2], "--version"],
        capture_output=True,
        text=True,
        env={},
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == f"stratamem {stratamem.__version__}"


def test_shell_completion_script(run, monkeypatch):
    monkeypatch.setenv("_STRATAMEM_COMPLETE", "bash_source")
    r = CliRunner().invoke(cli, [], prog_name="stratamem", standalone_mode=True)
    assert "_stratamem_completion" in r.output


def test_mcp_names_its_database_on_stderr(tmp_path):
    db = tmp_path / "where.db"
    done = subprocess.run(
        [sys.executable, "-m", "stratamem", "mcp", "--db", str(db)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"database SQLite {db}" in done.stderr and done.stdout == ""


def test_config_resolves_a_markdown_store(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    info = json.loads(run("config", "--json", "--db", "markdown://notes", with_db=False).output)
    assert info["db"] == f"markdown://{tmp_path / 'notes'}" and info["backend"] == "markdown"
    assert info["mcp"]["mcpServers"]["stratamem"]["args"][3] == info["db"]
