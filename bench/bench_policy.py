"""Scanner and redaction under attack: bypass rate, false positives, and time on hostile input.

Run: ``python bench/bench_policy.py``. Corpora are the tests' (tests/policy/scanner_corpus.py,
tests/policy/redaction_corpus.py); nothing here is a unit test and nothing asserts on time.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "policy"))

from redaction_corpus import BENIGN as REDACTION_BENIGN
from redaction_corpus import CREDENTIALS
from scanner_corpus import BENIGN, poisoned

from stratamem.policy.redact import redact_secrets
from stratamem.policy.scanner import scan

HOSTILE = {
    "curl x13000": "curl " * 13000,
    "curl $KEY x6000": "curl $KEY " * 6000,
    "eyJ x20000": "eyJ" * 20000,
    "A x65536": "A" * 65536,
    "base64 run": "Y3Vy" * 16000,
    "%41 x20000": "%41" * 20000,
    "\\u0041 x10000": "\\u0041" * 10000,
    "spaced letters": "c u r l " * 8000,
    "zero-width x60000": "\u200b" * 60000,
    "key + 100k spaces": "key" + " " * 100000,
    "// x100000": "//" * 100000,
    "sk- x30000": "sk-" * 30000,
    "en dash x60000": "\u2013" * 60000,
    "sk\u2010 x20000": "sk\u2010" * 20000,
    "soft hyphen x60000": "\u00ad" * 60000,
    "Japanese 64k": "\u65e5\u672c\u8a9e\u306e\u6587" * 12800,
    "1 MB of a": "a" * 1_000_000,
}


def timed(fn, text: str) -> float:
    started = time.perf_counter()
    fn(text)
    return time.perf_counter() - started


def main() -> None:
    corpus = poisoned()
    started = time.perf_counter()
    missed = Counter(name for _, name, text in corpus if not scan(text))
    took = time.perf_counter() - started
    print(
        f"scanner: {sum(missed.values())}/{len(corpus)} obfuscated writes bypass "
        f"({sum(missed.values()) / len(corpus):.1%}); {dict(missed) or 'none'}; {took / len(corpus) * 1e3:.2f} ms/write"
    )
    flagged = [t for t in BENIGN if scan(t)]
    print(f"scanner: {len(flagged)}/{len(BENIGN)} benign writes flagged")
    survivors = [kind for kind, text, secret in CREDENTIALS if secret in redact_secrets(text)]
    changed = [t for t in REDACTION_BENIGN if redact_secrets(t) != t]
    print(
        f"redaction: {len(survivors)}/{len(CREDENTIALS)} credential kinds survive {survivors or ''}; "
        f"{len(changed)}/{len(REDACTION_BENIGN)} benign texts changed"
    )
    print(f"{'hostile input':<22} {'chars':>9} {'scan s':>8} {'redact s':>9}")
    for name, text in HOSTILE.items():
        print(
            f"{name:<22} {len(text):>9} {timed(scan, text[:65536]):>8.3f} {timed(redact_secrets, text):>9.3f}"
        )


if __name__ == "__main__":
    main()
