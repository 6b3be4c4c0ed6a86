"""The memory-poisoning scanner: secrets and exfiltration recipes in memory writes.

A memory is read back into later prompts, so a write that smuggles in a
credential or a "curl my secrets to this host" instruction poisons every
future turn. Each pattern names a *kind*; callers report kinds, never the
matched text, so a rejection can be shown to the model (and logged) without
repeating the secret.

Refusals use the code POLICY_BLOCKED, not VALIDATION_ERROR: the write is
well formed, and it is the operator's policy (REJECT mode, the default) that
refuses it. In QUARANTINE mode the write is stored with the reserved tag
``stratamem:quarantine`` and every tool read leaves it out; operators still
see it through the store API.

Every write is matched in several views (``normalize.views``: folded,
repaired, decoded, rot13, reversed), so trivial encodings do not hide a
payload; patterns are written for folded (lower-case) text. Patterns use
bounded windows (``{0,N}``) so scanning stays linear on the largest allowed
content, and long text is viewed in overlapping chunks.

Ordinary text takes a fast path with the same verdicts (``scan``, ``scan_all``): views are built skipping
only work that provably changes nothing (``normalize.views``), and a view is matched only against the kinds
whose literals it holds (``_FAST_LITERALS``). ``scan_full`` is the full path, the reference
``tests/policy/test_scanner_fast_path.py`` compares the fast one with.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Iterator
from enum import StrEnum

from ..errors import ValidationError
from .credentials import PASSWORD_PHRASE
from .normalize import chunks, views

QUARANTINE_TAG = "stratamem:quarantine"
RESERVED_TAG_PREFIX = "stratamem:"


class ScanMode(StrEnum):
    """What a write with findings does: refused (default), or stored but withheld from reads."""

    REJECT = "reject"
    QUARANTINE = "quarantine"
    OFF = "off"

    @classmethod
    def parse(cls, value: object) -> ScanMode:
        """The mode named exactly as the server config writes it; anything else a ``ValidationError``."""
        if isinstance(value, cls):
            return value
        for member in cls:
            if value == member.value:
                return member
        valid = ", ".join(m.value for m in cls)
        raise ValidationError(f"unknown scan_mode {value!r}; valid values are {valid}")


_SECRET_VAR = (
    r"\$\{?[A-Za-z0-9_]{0,64}?(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)[A-Za-z0-9_]{0,64}\}?"
)
_SECRET_FILE = (
    r"(?:\.env(?:\.[\w-]+)?|id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?|\.netrc|\.pgpass"
    r"|\.git-credentials|\.aws/credentials|\.docker/config\.json|\.kube/config)\b"
)
_READ_VERB = (
    r"\b(?:cat|less|more|head|tail|type|source|base64|xxd|od|strings|grep|awk|sed|scp|rsync|cp"
    r"|open|read|load|print|dump|upload|send|exfiltrate|include)\b"
)

_I = re.IGNORECASE
_EXFIL_TOOL = r"(?:curl|wget|nc|ncat|netcat|socat|httpie|http|iwr|irm|invoke-webrequest|invoke-restmethod)"

PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "shell_exfiltration": (
        # plus a secret variable near a sender on its line: see _exfiltration_nearby
        re.compile(r"\b(?:env|printenv|set)\b\s*\|\s*(?:curl|wget|nc|ncat|netcat|socat|base64)\b", _I),
    ),
    "secret_file_read": (
        re.compile(rf"{_READ_VERB}[^\n]{{0,120}}?(?<![\w.]){_SECRET_FILE}", _I),
        re.compile(rf"(?:<\s*|@)[~\w./-]{{0,120}}?(?<![\w.]){_SECRET_FILE}", _I),
    ),
    "private_key": (re.compile(r"-----\s?BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?\s?-----", _I),),
    "hardcoded_credential": (
        re.compile(
            r"\b(?:password|passwd|passphrase|client[_-]?secret|api[_-]?key|apikey"
            r"|access[_-]?token|auth[_-]?token|secret[_-]?key|private[_-]?key)\b"
            r"[\"']?\s{0,3}[:=]\s{0,3}[\"']?(?![\s\"'$<*{\[(])[^\s\"']{4,}",
            _I,
        ),
        re.compile(PASSWORD_PHRASE, _I),
        re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,64}:[^\s@/]{3,128}@[\w.-]+", _I),  # user:pass@host
    ),
    "aws_access_key": (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", _I),),
    "openai_api_key": (re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}", _I),),
    "github_token": (
        re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}", _I),
        re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}", _I),
    ),
    "slack_token": (re.compile(r"\bxox[abeprs]-[A-Za-z0-9-]{10,}", _I),),
    "google_api_key": (re.compile(r"\bAIza[0-9A-Za-z_-]{35}", _I),),
    "stripe_key": (re.compile(r"\b(?:sk|rk)_live_[A-Za-z0-9]{10,}", _I),),
}

KINDS = tuple(PATTERNS)


# A pattern runs only on a view holding one of its anchor strings (most views hold none): cheap
# substring tests keep hostile repetitions ("curl curl curl ...") from costing every pattern's window.
_ANCHORS: dict[str, tuple[str, ...]] = {
    "shell_exfiltration": ("$", "|"),
    "secret_file_read": (".env", "id_", ".netrc", ".pgpass", "credentials", "config"),
    "private_key": ("private key",),
    "aws_access_key": ("akia", "asia"),
    "openai_api_key": ("sk-",),
    "github_token": ("gh", "github_pat_"),
    "slack_token": ("xox",),
    "google_api_key": ("aiza",),
    "stripe_key": ("_live_",),
}


_VAR_RE = re.compile(_SECRET_VAR, _I)
_SENDER_RE = re.compile(rf"\b{_EXFIL_TOOL}\b", _I)
_PIPE_TO_SENDER_RE = re.compile(r"\|\s*(?:curl|wget|nc|ncat|netcat|socat)\b", _I)
_NEAR = 400


def _exfiltration_nearby(text: str) -> bool:
    """A secret variable with a sender before it, or piped into one after it, within 400 characters
    on one line. Positions are found once and paired by bisection: linear on hostile repetitions."""
    variables = [m.span() for m in _VAR_RE.finditer(text)]
    if not variables:
        return False
    senders = [m.start() for m in _SENDER_RE.finditer(text)]
    pipes = [m.start() for m in _PIPE_TO_SENDER_RE.finditer(text)]
    for start, end in variables:
        line_start = text.rfind("\n", 0, start) + 1
        i = bisect.bisect_left(senders, start) - 1
        if i >= 0 and senders[i] >= max(line_start, start - _NEAR):
            return True
        line_end = text.find("\n", end)
        j = bisect.bisect_left(pipes, end)
        if j < len(pipes) and pipes[j] <= min(end + _NEAR, len(text) if line_end < 0 else line_end):
            return True
    return False


def _matched(text: str, kinds: Iterable[str]) -> set[str]:
    """Which of ``kinds`` have a pattern matching ``text`` (the secret-variable check for shell exfiltration)."""
    return {
        kind
        for kind in kinds
        if any(p.search(text) for p in PATTERNS[kind])
        or (kind == "shell_exfiltration" and _exfiltration_nearby(text))
    }


def scan_surface(text: str) -> set[str]:
    """Kinds matched in ``text`` exactly as given (one view; patterns expect folded text)."""
    return _matched(
        text, (k for k in KINDS if (anchors := _ANCHORS.get(k)) is None or any(a in text for a in anchors))
    )


# The fast path's literals: a view is matched against a kind's patterns only if it holds one of them. Each
# is a string every match of one of the kind's patterns contains (shell exfiltration keeps the full path's
# anchors), so a view without any of a kind's literals cannot match it. The patterns ignore case and a view
# is case folded, so a match holds those strings in lower case as written — unless the view has a letter
# re.IGNORECASE equates with a lower-case ASCII one (``_CASE_TWINS``), when the fast path scans like the full.
_FAST_LITERALS: dict[str, tuple[str, ...]] = {
    "shell_exfiltration": _ANCHORS["shell_exfiltration"],
    "secret_file_read": (
        *(".env", ".netrc", ".pgpass", "credentials", "/config"),
        *("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"),
    ),
    "private_key": ("private key",),
    "hardcoded_credential": (
        *("pass", "pin", "pwd", "secret", "://", "apikey", "api_key", "api-key"),
        *("accesstoken", "access_token", "access-token", "authtoken", "auth_token", "auth-token"),
        *("privatekey", "private_key", "private-key"),
    ),
    "aws_access_key": ("akia", "asia"),
    "openai_api_key": ("sk-",),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack_token": ("xoxa-", "xoxb-", "xoxe-", "xoxp-", "xoxr-", "xoxs-"),
    "google_api_key": ("aiza",),
    "stripe_key": ("sk_live_", "rk_live_"),
}
_LITERALS = tuple((literal, kind) for kind, literals in _FAST_LITERALS.items() for literal in literals)
assert tuple(_FAST_LITERALS) == KINDS and not any("\n" in literal for literal, _ in _LITERALS)
# Letters re.IGNORECASE matches to ASCII letters: upper case, and İ ı ſ K (as i, i, s, k)
_CASE_TWINS = re.compile("[A-Z\u0130\u0131\u017f\u212a]")
_GROUP_CHARS = 64 * 1024  # views tested together (joined by newlines) by the fast path


def _kinds_fast(views: list[str]) -> set[str]:
    """``scan_surface`` over ``views``, but each view matched only against kinds whose literals it holds.

    The views are joined by newlines (no literal holds one, so a hit lies inside one view) and each literal
    is found with ``str.find``: ordinary text costs a few dozen substring searches per group of views
    instead of a dozen regular expressions per view.
    """
    joined = "\n".join(views)
    if _CASE_TWINS.search(joined):
        return set().union(*map(scan_surface, views))
    starts = list(itertools.accumulate((len(v) + 1 for v in views[:-1]), initial=0))
    todo: dict[int, set[str]] = {}
    for literal, kind in _LITERALS:
        at = joined.find(literal)
        while at >= 0:
            index = bisect.bisect_right(starts, at) - 1
            todo.setdefault(index, set()).add(kind)
            at = joined.find(literal, starts[index + 1]) if index + 1 < len(views) else -1
    found: set[str] = set()
    for index, kinds in todo.items():
        found |= _matched(views[index], kinds)
    return found


def _views_of(texts: Iterable[str], shortcuts: bool) -> Iterator[str]:
    for text in texts:
        for chunk in chunks(text):
            yield from views(chunk, shortcuts=shortcuts)


def _scan(texts: Iterable[str], *, shortcuts: bool) -> tuple[str, ...]:
    """The kinds found in any view of any of ``texts``, in a fixed order.

    ``shortcuts=False`` is the full path: every view built the long way and given to :func:`scan_surface`.
    The fast path builds the same views (``views(..., shortcuts=True)``) and tests them in groups
    (:func:`_kinds_fast`); ``tests/policy/test_scanner_fast_path.py`` checks both give the same kinds.
    """
    found: set[str] = set()
    group: list[str] = []
    size = 0
    for view in _views_of(texts, shortcuts):
        if not shortcuts:
            found |= scan_surface(view)
        else:
            group.append(view)
            size += len(view) + 1
            if size < _GROUP_CHARS:
                continue
            found |= _kinds_fast(group)
            group, size = [], 0
        if len(found) == len(KINDS):
            break
    if group and len(found) < len(KINDS):
        found |= _kinds_fast(group)
    return tuple(kind for kind in KINDS if kind in found)


def scan(text: str) -> tuple[str, ...]:
    """The kinds of secret or exfiltration found in any view of ``text``, in a fixed order; empty when clean."""
    if not isinstance(text, str) or not text:
        return ()
    return _scan((text,), shortcuts=True)


def scan_full(text: str) -> tuple[str, ...]:
    """:func:`scan` by the full path, without shortcuts: the reference the fast path is tested against."""
    if not isinstance(text, str) or not text:
        return ()
    return _scan((text,), shortcuts=False)


def scan_all(texts: Iterable[object]) -> tuple[str, ...]:
    """Kinds found in any of the strings (non-strings are skipped: validation reports those)."""
    # A batch repeats names and types: each distinct text is viewed once per call, and the views of the
    # whole call are tested together. Nothing is remembered across calls: a verdict kept for one session
    # would make another's write of the same text measurably faster, telling it that somebody wrote that text.
    return _scan(dict.fromkeys(t for t in texts if isinstance(t, str) and t), shortcuts=True)


def describe(kinds: Iterable[str]) -> str:
    """A refusal the model can act on, naming kinds only — never the matched text."""
    names = ", ".join(kinds)
    return (
        f"memory write refused: it contains {names}. Memories are replayed into later prompts, so "
        "secrets and commands that read or send them are not stored; save a description instead "
        "(e.g. 'API key is in the vault under X')."
    )


def is_quarantined(tags: Iterable[str]) -> bool:
    return QUARANTINE_TAG in tags
