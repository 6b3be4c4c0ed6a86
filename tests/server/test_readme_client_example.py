"""The README's client + MCP example runs as written against a live server (so it never rots)."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import re
from pathlib import Path

from server_support import server, server_config, server_store, token  # noqa: F401

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_client_example_runs(server, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    [example] = [b for b in blocks if "sm.AsyncClient(URL)" in b]
    monkeypatch.setenv("STRATAMEM_TOKEN", token("alice"))
    code = example.replace('URL = "http://127.0.0.1:8765"', f'URL = "{server.url}"')
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "'classification': 'CONFIDENTIAL'" in out and "user-lang" in out
