"""``stratamem import -`` reads stdin through click's supported API.

It used ``click.get_text_stream``, deprecated in Click 8.2 and removed in Click 9: every import from
stdin warned, and the command would break on the next major release.
"""

from __future__ import annotations

import json
import warnings

from click.testing import CliRunner

from stratamem.cli import cli


def _invoke(db: str, *args: str, input: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        r = CliRunner().invoke(cli, ["--db", db, *args], input=input, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


def test_import_jsonl_from_stdin_without_deprecated_click_calls(tmp_path):
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    _invoke(src, "save", "k", "from stdin", input="")
    out = tmp_path / "dump.jsonl"
    _invoke(src, "export", str(out), input="")
    _invoke(dst, "import", "-", input=out.read_text(encoding="utf-8"))
    got = json.loads(_invoke(dst, "--json", "get", "k", input=""))
    assert got["content"] == "from stdin"


def test_import_mcp_memory_graph_from_stdin_without_deprecated_click_calls(tmp_path):
    line = json.dumps({"type": "entity", "name": "Ada", "entityType": "person", "observations": ["wrote"]})
    out = _invoke(
        str(tmp_path / "g.db"), "--json", "import", "--format", "mcp-memory", "-", input=line + "\n"
    )
    assert json.loads(out)["imported"]["nodes"] == 1
