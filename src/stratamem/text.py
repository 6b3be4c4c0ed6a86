"""Text analysis shared by indexing and querying: tokenise, drop query stopwords, stem.

Pure and deterministic, so a backend only ever stores and compares terms; it
never needs its own tokenizer (which is how SQLite and PostgreSQL stay
interchangeable and level names or agent ids can never leak into matching).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Protocol

import Stemmer

from .errors import ValidationError

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 32
MAX_TOKEN_CHARS = 64
ONE_PASS_WORDS = 512  # a single document up to this many words is stemmed word by word, repeats and all
# Bump when tokens() changes: stores re-index their terms on the next open.
ANALYZER_VERSION = "2"
# Combining diacritics (Latin, Greek, Cyrillic accents) are folded away: "café" is "cafe".
# Marks of other scripts (Devanagari vowel signs, ...) carry meaning and stay.
_ACCENTS = re.compile("[\u0300-\u036f]")
# Scripts written without spaces: Han, Hiragana, Katakana (with the prolonged-sound mark), Hangul syllables.
_CJK = re.compile(
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f]+"
)

# Function words that carry no topic. Dropped from queries only (documents keep
# them), and only when something else remains, so "who are you" still matches.
_STOPWORDS: dict[str, frozenset[str]] = {
    "english": frozenset(
        [
            "a",
            "about",
            "above",
            "after",
            "again",
            "against",
            "all",
            "am",
            "an",
            "and",
            "any",
            "are",
            "as",
            "at",
            "be",
            "because",
            "been",
            "before",
            "being",
            "below",
            "between",
            "both",
            "but",
            "by",
            "can",
            "could",
            "did",
            "do",
            "does",
            "doing",
            "down",
            "during",
            "each",
            "few",
            "for",
            "from",
            "further",
            "had",
            "has",
            "have",
            "having",
            "he",
            "her",
            "here",
            "hers",
            "herself",
            "him",
            "himself",
            "his",
            "how",
            "i",
            "if",
            "in",
            "into",
            "is",
            "it",
            "its",
            "itself",
            "just",
            "me",
            "more",
            "most",
            "my",
            "myself",
            "no",
            "nor",
            "not",
            "now",
            "of",
            "off",
            "on",
            "once",
            "only",
            "or",
            "other",
            "our",
            "ours",
            "ourselves",
            "out",
            "over",
            "own",
            "same",
            "she",
            "should",
            "so",
            "some",
            "such",
            "than",
            "that",
            "the",
            "their",
            "theirs",
            "them",
            "themselves",
            "then",
            "there",
            "these",
            "they",
            "this",
            "those",
            "through",
            "to",
            "too",
            "under",
            "until",
            "up",
            "very",
            "was",
            "we",
            "were",
            "what",
            "when",
            "where",
            "which",
            "while",
            "who",
            "whom",
            "why",
            "will",
            "with",
            "would",
            "you",
            "your",
            "yours",
            "yourself",
            "yourselves",
        ]
    ),
    "spanish": frozenset(
        [
            "a",
            "al",
            "algo",
            "como",
            "con",
            "de",
            "del",
            "el",
            "ella",
            "ellas",
            "ellos",
            "en",
            "entre",
            "era",
            "es",
            "esa",
            "ese",
            "eso",
            "esta",
            "este",
            "esto",
            "fue",
            "ha",
            "la",
            "las",
            "le",
            "les",
            "lo",
            "los",
            "me",
            "mi",
            "mas",
            "muy",
            "no",
            "nos",
            "o",
            "para",
            "pero",
            "por",
            "que",
            "se",
            "sin",
            "su",
            "sus",
            "te",
            "tu",
            "un",
            "una",
            "uno",
            "unos",
            "y",
            "ya",
            "yo",
        ]
    ),
}


def available_languages() -> tuple[str, ...]:
    return tuple(Stemmer.algorithms())


class _Stemmer(Protocol):
    """What we use of PyStemmer's ``Stemmer.Stemmer`` (the package ships no type information)."""

    def stemWords(self, words: list[str]) -> list[str]: ...  # PyStemmer's name


@cache
def _stemmer(language: str) -> _Stemmer:
    stemmer: _Stemmer = Stemmer.Stemmer(language)
    return stemmer


def check_languages(languages: Iterable[str]) -> tuple[str, ...]:
    langs = tuple(dict.fromkeys(lang.strip().lower() for lang in languages))
    known = set(available_languages())
    bad = [lang for lang in langs if lang not in known]
    if not langs or bad:
        raise ValidationError(
            f"unknown stemming language {bad or langs!r}; choose from {', '.join(sorted(known))}"
        )
    return langs


def fold(text: str) -> str:
    """NFKC, case-folded, Latin/Greek/Cyrillic accents removed."""
    if text.isascii():  # NFKC, NFD and NFC leave ASCII as it is; casefold is lower; no accents to remove
        return text.lower()
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    return unicodedata.normalize("NFC", _ACCENTS.sub("", decomposed))


def _split_cjk(word: str) -> list[str]:
    """A run of CJK characters becomes overlapping character bigrams (one character stays a unigram)."""
    out: list[str] = []
    last = 0
    for match in _CJK.finditer(word):
        if match.start() > last:
            out.append(word[last : match.start()])
        run = match.group()
        out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        last = match.end()
    if last < len(word):
        out.append(word[last:])
    return out


def tokens(text: str) -> list[str]:
    """Words, folded (``fold``); CJK runs as character bigrams; very long runs are cut, not dropped."""
    folded = fold(text)
    if folded.isascii() or _CJK.search(folded) is None:  # the common case: no word to split, one pass
        found: list[str] = _WORD.findall(folded)
        # words are maximal runs, so measuring them finds any over the bound (cheaper than another search)
        if max(map(len, found), default=0) <= MAX_TOKEN_CHARS:
            return found
        return [w[:MAX_TOKEN_CHARS] for w in found]
    words: list[str] = []
    for word in _WORD.findall(folded):
        words.extend(w[:MAX_TOKEN_CHARS] for w in (_split_cjk(word) if _CJK.search(word) else [word]))
    return words


def _words(key: str, content: str, tags: Sequence[str]) -> list[str]:
    """A document's words: its key's, its content's, then each tag's."""
    words = tokens(key) + tokens(content)
    for tag in tags:
        words.extend(tokens(tag))
    return words


class Analyzer:
    """Turns text into stemmed terms for one fixed set of Snowball languages."""

    def __init__(self, languages: Sequence[str] = ("english",)) -> None:
        self.languages = check_languages(languages)
        self._stemmers = [_stemmer(lang) for lang in self.languages]
        self._stop = frozenset().union(*(_STOPWORDS.get(lang, frozenset()) for lang in self.languages))

    def _stems(self, words: list[str]) -> list[str]:
        if len(self._stemmers) == 1:
            return self._stemmers[0].stemWords(words)
        out: list[str] = []
        for stemmer in self._stemmers:
            out.extend(stemmer.stemWords(words))
        return out

    def document_terms(self, key: str, content: str, tags: Sequence[str]) -> tuple[Counter[str], int]:
        """Term frequencies over key, content and tags, and the document length in words."""
        return self.document_terms_many([(key, content, tags)])[0]

    def document_terms_many(
        self, docs: Iterable[tuple[str, str, Sequence[str]]]
    ) -> list[tuple[Counter[str], int]]:
        """``document_terms`` of each (key, content, tags), each distinct word stemmed once for the lot.

        A batch of a thousand memories repeats most of its words; stemming the
        distinct ones once is the same mapping (a stem depends on the word
        alone) at a fraction of the calls. For one ordinary document (a single
        save) collecting the distinct words costs more than it saves: its words
        are stemmed as they come, in the same order, so the result is the same;
        a long one (over ``ONE_PASS_WORDS``) repeats enough words to take the
        batch's way.
        """
        texts = [_words(key, content, tags) for key, content, tags in docs]
        if len(self._stemmers) == 1:
            stemmer = self._stemmers[0]
            if len(texts) == 1 and len(texts[0]) <= ONE_PASS_WORDS:
                return [(Counter(stemmer.stemWords(texts[0])), len(texts[0]))]
            distinct = list({word for words in texts for word in words})
            stem = dict(zip(distinct, stemmer.stemWords(distinct), strict=True)).__getitem__
            return [(Counter(map(stem, words)), len(words)) for words in texts]
        distinct = list({word for words in texts for word in words})
        per_language = [dict(zip(distinct, s.stemWords(distinct), strict=True)) for s in self._stemmers]
        return [
            (Counter(stems[word] for stems in per_language for word in words), len(words)) for words in texts
        ]

    def content_words(self, text: str) -> list[str]:
        """The words of ``text`` that are not stopwords, unstemmed (what a query asks about)."""
        return [w for w in tokens(text) if w not in self._stop]

    def query_terms(self, query: str) -> list[str]:
        """Distinct stemmed query terms in first-seen order, stopwords dropped when possible."""
        words = tokens(query)
        content = [w for w in words if w not in self._stop] or words
        terms = list(dict.fromkeys(self._stems(content)))
        return terms[:MAX_QUERY_TERMS]
