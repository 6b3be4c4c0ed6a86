"""The store's search mode reaches every surface: CLI (``search --mode``, ``reindex``), tools, recall injection."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from stratamem import tools
from stratamem.cli import cli
from stratamem.embed import semantic_available

needs_model = pytest.mark.skipif(not semantic_available(), reason="stratamem[semantic] not installed")


@pytest.fixture
def hybrid_default(monkeypatch):
    monkeypatch.delenv("STRATAMEM_SEARCH_MODE")


@needs_model
def test_cli_search_mode_and_reindex(tmp_path, hybrid_default):
    db = str(tmp_path / "cli.db")
    runner = CliRunner()

    def run(*args):
        return runner.invoke(cli, ["--db", db, *args], catch_exceptions=False)

    assert run("save", "pet", "Caroline adopted a golden retriever puppy").exit_code == 0
    assert run("save", "job", "Melanie works as a nurse at the hospital").exit_code == 0
    r = run("reindex")
    assert r.exit_code == 0 and "2 memories embedded" in r.output
    found = json.loads(run("--json", "search", "which dog does she own").output)
    assert found["results"][0]["key"] == "pet"
    lexical = json.loads(run("--json", "search", "which dog does she own", "--mode", "lexical").output)
    assert lexical["results"] == []
    assert run("search", "x", "--mode", "fuzzy").exit_code == 2


def test_cli_semantic_mode_without_an_embedder_exits_2(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATAMEM_SEARCH_MODE", "lexical")
    import stratamem.embed as embed

    monkeypatch.setattr(embed, "semantic_available", lambda: False)
    db = str(tmp_path / "c.db")
    runner = CliRunner()
    runner.invoke(cli, ["--db", db, "save", "a", "text"])
    r = runner.invoke(cli, ["--db", db, "search", "text", "--mode", "semantic"])
    assert r.exit_code == 2


@needs_model
@pytest.mark.parametrize(
    "name,args",
    [
        ("memory_search", {"query": "which dog does she own"}),
        ("memory_recall", {"query": "which dog does she own"}),
    ],
)
def test_tools_use_the_store_mode(make_store, hybrid_default, name, args):
    store = make_store()
    s = store.session()
    s.save("pet", "Caroline adopted a golden retriever puppy")
    s.save("job", "Melanie works as a nurse at the hospital")
    profile = "zeroclaw" if name == "memory_recall" else "triggerfish"
    out = tools.execute(s, name, args, profile=profile)
    assert "pet" in out and "golden retriever" in out


@needs_model
def test_recall_injection_uses_the_store_mode(make_store, hybrid_default):
    from stratamem.turn import ContextConfig, render_memory_context

    store = make_store()
    s = store.session()
    s.save("pet", "Caroline adopted a golden retriever puppy")
    s.save("car", "The car needs new tyres")
    # found by meaning alone (no word in common): injected once the term-coverage floor is off, which
    # holds in every mode (issue 27, item 3)
    unfloored = ContextConfig(min_coverage=0.0)
    block = render_memory_context(s, "which dog does she own?", "interactive", config=unfloored)
    assert "golden retriever" in block and "tyres" not in block.split("golden retriever")[0]
    assert render_memory_context(s, "which dog does she own?", "interactive") == ""
    assert "golden retriever" in render_memory_context(s, "what dog did Caroline adopt?", "interactive")
