"""No module outside a backend's package touches that backend's private names.

Each backend package (``storage/sqlite``, ``storage/postgres``, ``storage/markdown``)
offers the rest of the code its public methods and the transaction seam
(``read``/``write``/``operator``); its private methods and attributes are its own.
The scan reads every module of ``src/stratamem`` by AST: an attribute access
``x._name`` (not on ``self``/``cls``, not a dunder) whose name a backend class of
*another* package defines, and the module's own backend class does not, is a
reach-in. The private names are collected from the backend classes by AST too,
so a new private method is covered without editing this test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import stratamem

SRC = Path(stratamem.__file__).parent
BACKENDS = {  # package -> (module, class)
    "storage/sqlite": ("backend.py", "SQLiteBackend"),
    "storage/postgres": ("backend.py", "PostgresBackend"),
    "storage/markdown": ("backend.py", "MarkdownBackend"),
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_names(source: str, cls: str) -> set[str]:
    """Methods, class attributes and ``self._x`` attributes the class ``cls`` defines."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            names: set[str] = set()
            for item in ast.walk(node):
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(item.name)
                elif (
                    isinstance(item, ast.Attribute)
                    and isinstance(item.ctx, ast.Store)
                    and isinstance(item.value, ast.Name)
                    and item.value.id in ("self", "cls")
                ):
                    names.add(item.attr)
            for item in node.body:
                targets = item.targets if isinstance(item, ast.Assign) else []
                if isinstance(item, ast.AnnAssign):
                    targets = [item.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
            return {n for n in names if _private(n)}
    raise AssertionError(f"no class {cls}")


def reach_ins(source: str, forbidden: set[str]) -> list[tuple[int, str]]:
    """(line, expression) of every access ``x._name`` with ``_name`` in ``forbidden``, ``x`` not self/cls."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in forbidden:
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def scan(root: Path) -> list[str]:
    """Every reach-in under ``root`` (a ``stratamem`` package directory), as ``path:line: expression``."""
    owned = {
        package: private_names((root / package / module).read_text(), cls)
        for package, (module, cls) in BACKENDS.items()
        if (root / package / module).exists()
    }
    problems = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        home = next((p for p in owned if rel.startswith(p + "/")), None)
        forbidden = set().union(*(names for p, names in owned.items() if p != home))
        forbidden -= owned.get(home, set()) if home else set()
        problems += [f"{rel}:{line}: {expr}" for line, expr in reach_ins(path.read_text(), forbidden)]
    return problems


def test_the_backend_classes_private_names_are_collected():
    sqlite = private_names((SRC / "storage/sqlite/backend.py").read_text(), "SQLiteBackend")
    assert {"_tx", "_errors", "_session", "_append", "_append_many", "_conn", "_lock"} <= sqlite
    assert "__init__" not in sqlite and "read" not in sqlite


def test_the_scan_finds_a_reach_in_and_passes_self():
    source = "def f(db, self):\n    with db._tx(write=True) as c:\n        self._tx()\n    return db.read\n"
    assert reach_ins(source, {"_tx"}) == [(2, "db._tx")]


def test_no_module_touches_another_packages_backend_privates():
    assert scan(SRC) == []


def protocol_operations(source: str) -> list[str]:
    """The methods and properties the ``Backend`` protocol names (its attributes, e.g. ``analyzer``, aside)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Backend":
            return [item.name for item in node.body if isinstance(item, ast.FunctionDef)]
    raise AssertionError("no Backend protocol")


def test_the_backend_protocol_names_at_most_twenty_operations():
    # what is written once runs as a body through a seam (transactions, graph, vectors), not as a method
    operations = protocol_operations((SRC / "storage/protocol.py").read_text())
    assert "search" in operations and "transactions" in operations
    assert len(operations) <= 20, operations


def test_the_sql_backends_modules_stay_under_600_lines():
    for package in ("storage/sqlite", "storage/postgres", "storage/sql"):
        for path in (SRC / package).glob("*.py"):
            assert len(path.read_text().splitlines()) <= 600, path.relative_to(SRC)
