"""Where the credentials are in a text: spans to mask, for events, errors and logs.

Detection comes from two sources. ``detect-secrets`` (Yelp) supplies the
format detectors it maintains (AWS, Azure storage, GitHub, GitLab, JWT,
Slack, Stripe, Twilio, SendGrid, npm, PyPI, Telegram, Discord, Square,
Mailchimp, Artifactory, OpenAI, basic-auth URLs). Our own patterns cover what
it lacks: PGP and PEM private key blocks, ``scheme://:pw@host``, Azure
``AccountKey=``/``SharedAccessKey=`` and SAS ``sig=``, "the password is ...",
``passphrase:``, Slack ``xapp-``, Telegram bot tokens in URLs, Discord
webhooks, ``.netrc`` passwords, ``mysql -pSECRET``, secret query parameters,
HTTP Digest ``response=``, auth headers, ``name = value`` pairs whose name
looks secret, and many token formats.

Time is bounded on hostile input. Some ``detect-secrets`` patterns backtrack
quadratically or worse (the IBM/Softlayer keyword patterns are cubic on a run
of spaces; JWT and npm are quadratic), so those plugins are not used (the
pair pattern and our own formats cover them) and the others run on overlapping windows of
``WINDOW`` characters; our own patterns are linear (possessive quantifiers,
look-behinds instead of ``\\b`` inside runs, bounded repeats).

Look-alikes are looked through: a text that is not plain ASCII is also searched folded (every dash and
minus sign as ``-``, spaces as `` ``, fullwidth forms, look-alike letters and punctuation as ASCII,
invisibles removed — ``normalize.fold_positions``; and once more with soft hyphens and zero-width spaces as
the separator they may stand for), and what is found there is masked at the same place in the text. A key
written with en dashes is still a key to whoever reads it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from .normalize import fold_positions, separated, strip_invisible

__all__ = ["PASSWORD_PHRASE", "SECRET_WORD", "find_credentials", "is_secret_name"]

WINDOW = 512
WINDOW_OVERLAP = 192  # a detector match up to this long is always inside one window

# Names of fields and parameters that hold a secret. ``auth`` must not match
# ``author``; ``session`` covers session ids, keys and cookies.
SECRET_WORD = (
    r"(?:password|passwd|passphrase|passcode|pwd|secret|token(?!s\b)|api[_-]?key|apikey|access[_-]?key"
    r"|account[_-]?key|shared[_-]?access[_-]?key|private[_-]?key|signing[_-]?key|encryption[_-]?key"
    r"|authorization|auth(?!or)|credential|client[_-]?secret|session|cookie|dsn)"
)
_SECRET_WORD_RE = re.compile(SECRET_WORD, re.IGNORECASE)

# "the password is hunter2", "my passphrase was: correct horse". The value is
# the next word unless it is a word that describes rather than discloses.
PASSWORD_PHRASE = (
    r"(?i:\b(?:password|passwd|passphrase|passcode|pin|pwd)\s{1,3}(?:is|was|=|:|is:|set to|now)\s{1,3}"
    r"(?![\"']?(?:a|an|the|not|in|on|stored|kept|managed|required|set|at|being|changed|rotated|expired"
    r"|my|your|our|their|its|ask|same|different|empty|blank|missing|wrong|correct|incorrect|too|very"
    r"|unknown|secret|saved|reset|available|needed|encrypted|hashed|shared|sent|written|given|also|still"
    r"|only|just|now|here|there|below|above|that|this|what|of|for|from|with|by)\b)"
    r"[\"']?(?P<secret>[^\s\"']{3,200}))"
)

_SEP = r"[^\S\n]*+[:=][^\S\n]*+"
_OWN_PATTERNS: tuple[str, ...] = (
    # private key blocks (PEM, OpenSSH, PGP, PuTTY): the whole block goes; any space or line break
    # between the armour's words
    r"(?P<secret>-----BEGIN[\sA-Z0-9]{0,40}PRIVATE\s{1,3}KEY(?:\s{1,3}BLOCK)?-----[\s\S]{0,20000}?"
    r"(?:-----END[\sA-Z0-9]{0,40}PRIVATE\s{1,3}KEY(?:\s{1,3}BLOCK)?-----|\Z))",
    r"PuTTY-User-Key-File-\d:[^\n]*+\n(?P<secret>(?:[^\n]*+\n?){1,40})",
    # URL credentials, user optional (redis://:pw@host)
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s:/@]{0,128}+:(?P<secret>[^\s@/]{1,256}+)@",
    r"(?<![A-Za-z0-9+.-])https?://(?P<secret>[A-Za-z0-9]{20,64}+)@[\w.-]+\.(?:sentry\.io|ingest\.\w+)",
    # Azure storage and service bus, SAS signatures
    r"(?i:AccountKey|SharedAccessKey|SharedSecret)=(?P<secret>[^;\s\"']{8,}+)",
    r"(?i:[?&;\s\"']sig)=(?P<secret>[A-Za-z0-9%+/=_-]{10,}+)",
    # secret query parameters (?key=, &token=, &access_token=, &api_key=, &client_secret=, ...)
    r"[?&;](?i:key|api[_-]?key|apikey|token|access[_-]?token|refresh[_-]?token|id[_-]?token|auth|secret"
    r"|client[_-]?secret|password|pass|pwd|signature|x-amz-signature|x-amz-credential|x-goog-signature"
    r"|code|session|sessionid)=(?P<secret>[^&#\s\"'<>]{4,}+)",
    # Telegram bot tokens in URLs and Discord webhooks
    r"/bot(?P<secret>\d{5,12}:[A-Za-z0-9_-]{30,40}+)",
    r"(?i:discord(?:app)?\.com/api/webhooks/)\d{5,25}+/(?P<secret>[A-Za-z0-9_-]{20,}+)",
    r"(?i:hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<secret>[A-Za-z0-9_/-]{10,}+)",
    # .netrc, mysql/psql/redis-cli command lines
    r"(?i:\bmachine\s++\S++(?:\s++login\s++\S++)?\s++password)\s++(?P<secret>\S++)",
    r"(?m)^[^\S\n]*+(?i:password)[^\S\n]++(?P<secret>\S++)(?=[^\S\n]++(?:machine|login|account)\b|[^\S\n]*+$)",
    r"(?i:\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,200}?\s-p)(?P<secret>[^\s-][^\s]{0,200}+)",
    r"(?i:--password[= ])(?P<secret>[^\s\"']{1,200}+)",
    r"(?i:\bredis-cli\b[^\n]{0,200}?\s-a\s++)(?P<secret>\S{1,200}+)",
    r"(?i:\bsshpass\s++-p\s*+)(?P<secret>\S{1,200}+)",
    r"(?i:PGPASSWORD|MYSQL_PWD|REDISCLI_AUTH)=(?P<secret>[^\s\"']{1,200}+)",
    # HTTP auth headers and Digest fields
    r"(?i:\b(?:Bearer|Basic|Token|Negotiate|Bot))\s++(?P<secret>[A-Za-z0-9._~+/=-]{8,}+)",
    r"(?i:\b(?:response|cnonce|nonce)=)\"?(?P<secret>[0-9A-Za-z+/=_-]{8,}+)",
    r"(?i:\bx-(?:api|auth|access)[-_](?:key|token)\s*+:\s*+)(?P<secret>[^\s\"',;]{6,}+)",
    r"(?i:\bcookie:\s*+)(?P<secret>[^\n]{4,2000}+)",
    # natural language
    PASSWORD_PHRASE,
    r"(?i:\bpassphrase\b)[^\S\n]*+[:=]?[^\S\n]*+[\"']?(?P<secret>[^\s\"']{3,200}+)",
    # token formats with a fixed prefix (look-behind: never start inside a run)
    r"(?<![A-Za-z0-9_-])(?P<secret>sk-(?:ant-(?:api|admin)\d{2}-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>whsec_[A-Za-z0-9]{20,}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>gh[pousr]_[A-Za-z0-9]{20,}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>github_pat_[A-Za-z0-9_]{20,}+)",
    r"(?<![A-Za-z0-9_-])(?P<secret>gl(?:pat|dt|ft|rt|soat|cbt|imt|ptt|oas|agent)-[A-Za-z0-9_-]{20,}+)",
    r"(?<![A-Za-z0-9])(?P<secret>(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16})(?![0-9A-Z])",
    r"(?i:aws_?secret_?(?:access_?)?key\b[\"']?)" + _SEP + r"[\"']?(?P<secret>[A-Za-z0-9/+=]{40})",
    r"(?<![A-Za-z0-9_-])(?P<secret>xox[abeoprs]-[A-Za-z0-9-]{10,}+)",
    r"(?<![A-Za-z0-9_-])(?P<secret>xapp-\d-[A-Za-z0-9-]{10,}+)",
    r"(?<![A-Za-z0-9_-])(?P<secret>AIza[0-9A-Za-z_-]{35})",
    r"(?<![A-Za-z0-9_-])(?P<secret>ya29\.[0-9A-Za-z_-]{20,}+)",
    r"(?<![A-Za-z0-9_-])(?P<secret>GOCSPX-[0-9A-Za-z_-]{20,}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>hf_[A-Za-z0-9]{30,}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>npm_[A-Za-z0-9]{36,}+)",
    r"(?<![A-Za-z0-9_-])(?P<secret>pypi-[A-Za-z0-9_-]{50,}+)",
    r"(?<![A-Za-z0-9_.-])(?P<secret>SG\.[A-Za-z0-9_-]{16,}+\.[A-Za-z0-9_-]{16,}+)",
    r"(?<![A-Za-z0-9_-])(?P<secret>eyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]*+)",
    r"(?<![A-Za-z0-9])(?P<secret>(?:AC|SK)[0-9a-f]{32})(?![0-9a-f])",
    r"(?<![A-Za-z0-9_])(?P<secret>dop_v1_[a-f0-9]{64})",
    r"(?<![A-Za-z0-9_])(?P<secret>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})",
    r"(?<![A-Za-z0-9_-])(?P<secret>sq0(?:atp|csp)-[0-9A-Za-z_-]{22,}+)",
    r"(?<![A-Za-z0-9_.])(?P<secret>hv[sbr]\.[A-Za-z0-9_-]{24,}+)",
    r"(?<![A-Za-z0-9_.])(?P<secret>dp\.(?:st|ct|sa|scim|audit)\.[A-Za-z0-9_.-]{20,}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>dapi[a-f0-9]{32}(?:-\d)?)",
    r"(?<![A-Za-z0-9_])(?P<secret>lin_(?:api|oauth)_[A-Za-z0-9]{32,}+)",
    r"(?<![A-Za-z0-9_-])(?P<secret>PMAK-[a-f0-9]{24}-[a-f0-9]{34})",
    r"(?<![A-Za-z0-9_])(?P<secret>gl(?:sa|c)_[A-Za-z0-9_=+/]{32,}+)",
    r"(?<![A-Za-z0-9_-])(?P<secret>NRAK-[A-Z0-9]{27})",
    r"(?<![A-Za-z0-9_-])(?P<secret>AGE-SECRET-KEY-1[0-9A-Z]{50,70})",
    r"(?<![A-Za-z0-9_])(?P<secret>key-[0-9a-f]{32})",
    r"(?<![A-Za-z0-9_.])(?P<secret>sk\.eyJ[A-Za-z0-9_.-]{20,}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>LTAI[A-Za-z0-9]{12,20})",
    r"(?<![A-Za-z0-9_.])(?P<secret>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>rubygems_[a-f0-9]{48})",
    r"(?<![A-Za-z0-9_])(?P<secret>(?:pul|pat)-[a-f0-9]{40})",
    r"(?<![A-Za-z0-9_])(?P<secret>sntrys_[A-Za-z0-9+/=_-]{40,}+)",
    r"(?<![A-Za-z0-9_-])(?P<secret>xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16})",
    r"(?<![A-Za-z0-9_])(?P<secret>glsa_[A-Za-z0-9]{32}_[a-f0-9]{8})",
    r"(?<![A-Za-z0-9_])(?P<secret>ops_eyJ[A-Za-z0-9_.-]{20,}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>sl\.[A-Za-z0-9_-]{60,}+)",
    # password hashes (an offline guess away from the password): bcrypt, the PHC strings of argon2,
    # scrypt, pbkdf2 and yescrypt, crypt(3)'s MD5 and SHA-2 forms, Django's
    r"(?P<secret>\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{50,200}+)",
    r"(?P<secret>\$(?:argon2(?:id|i|d)|scrypt|pbkdf2(?:-sha\d{1,3})?|yescrypt|y|gy|7)\$[A-Za-z0-9+/.=,$_-]{16,800}+)",
    r"(?P<secret>\$(?:1|5|6|apr1|md5|sha1)\$(?:rounds=\d{1,9}\$)?[./A-Za-z0-9]{1,64}\$[./A-Za-z0-9]{20,200}+)",
    r"(?<![A-Za-z0-9_])(?P<secret>(?:pbkdf2_sha\d{1,3}|argon2|bcrypt_sha256|scrypt)\$[A-Za-z0-9+/.=,$_-]{20,800}+)",
    # name = value pairs whose name looks secret: "name": "value", name=value, name: value
    rf"""(?ix)(?<![\w.-])
        \\?["']?(?=[\w.-]{{0,80}}?{SECRET_WORD})[\w.-]{{1,120}}+\\?["']?
        [^\S\n]*+(?:[:=]|:=|=>)[^\S\n]*+
        (?:
           \\"(?P<eq>(?:[^"\\\n]|\\[^"\n]){{1,4000}}+)\\"
         | "(?P<dq>(?:[^"\\\n]|\\.){{1,4000}}+)"
         | '(?P<sq>(?:[^'\\\n]|\\.){{1,4000}}+)'
         | (?:(?:Bearer|Basic|Token|Digest)\s++)?(?P<bare>[^\s"',;&}}\]]{{1,4000}}+)
        )""",
)

_COMPILED: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in _OWN_PATTERNS)
_VALUE_GROUPS = ("secret", "eq", "dq", "sq", "bare")

# detect-secrets plugins used. Left out because their patterns backtrack badly on
# hostile input: the keyword-pair ones (Cloudant, IBM, Softlayer, Keyword: cubic on
# a run of spaces), JWT and npm (quadratic on "eyJeyJ..." and "////..."); the pair
# pattern and our JWT and npm patterns above cover what they find.
_PLUGINS: dict[str, tuple[str, ...]] = {  # plugin -> strings one of which a window must hold
    "artifactory.ArtifactoryDetector": ("AKC", "AP"),
    "aws.AWSKeyDetector": ("A3T", "ABIA", "ACCA", "AKIA", "ASIA", "aws", "AWS", "Aws"),
    "azure_storage_key.AzureStorageKeyDetector": ("AccountKey=",),
    "basic_auth.BasicAuthDetector": ("://",),
    "discord.DiscordBotTokenDetector": (".",),
    "github_token.GitHubTokenDetector": ("gh",),
    "gitlab_token.GitLabTokenDetector": ("gl", "GR1348941"),
    "mailchimp.MailchimpDetector": ("-us",),
    "openai.OpenAIDetector": ("T3BlbkFJ",),
    "pypi_token.PypiTokenDetector": ("pypi-AgE",),
    "sendgrid.SendGridDetector": ("SG.",),
    "slack.SlackDetector": ("xox", "hooks.slack.com"),
    "square_oauth.SquareOAuthDetector": ("sq0csp-",),
    "stripe.StripeDetector": ("_live_",),
    "telegram_token.TelegramBotTokenDetector": (":",),
    "twilio.TwilioKeyDetector": ("AC", "SK"),
}


_LEAD = " \t\r\n=:\"'"  # detectors' delimiters, not part of the value
_TRAIL = " \t\r\n\"'"


@functools.lru_cache(maxsize=1)
def _plugin_patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    """The maintained detectors' regular expressions with their anchors (imported on first use: slow to load)."""
    import importlib

    patterns: list[tuple[re.Pattern[str], tuple[str, ...]]] = []
    for path, anchors in _PLUGINS.items():
        module, name = path.rsplit(".", 1)
        try:
            plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)()
            patterns.extend((pattern, anchors) for pattern in plugin.denylist)
        except Exception:  # noqa: BLE001 - a plugin renamed upstream must not disable redaction
            continue
    return tuple(patterns)


def is_secret_name(name: str) -> bool:
    """Whether a field or parameter name looks like it holds a credential (``api‐key`` with another dash,
    or ``pаssword`` with a Cyrillic letter, too)."""
    if _SECRET_WORD_RE.search(name) is not None:
        return True
    return not name.isascii() and any(
        _SECRET_WORD_RE.search(strip_invisible(reading)) is not None for reading in (name, separated(name))
    )


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    for group in _VALUE_GROUPS:
        if group in match.re.groupindex and match.group(group) is not None:
            return match.span(group)
    if match.re.groups:
        for index in range(1, match.re.groups + 1):
            if match.group(index):
                return match.span(index)
    return match.span()


def _windows(length: int) -> Iterator[tuple[int, int]]:
    if length <= WINDOW:
        yield 0, length
        return
    step = WINDOW - WINDOW_OVERLAP
    for start in range(0, length - WINDOW_OVERLAP, step):
        yield start, min(length, start + WINDOW)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in _LEAD:
        start += 1
    while end > start and text[end - 1] in _TRAIL:
        end -= 1
    return start, end


def find_credentials(text: str) -> list[tuple[int, int]]:
    """Sorted, merged ``(start, end)`` spans of credential values in ``text``, or in ``text`` with its
    look-alike characters folded (see the module's docstring)."""
    spans = _found(text)
    if not text.isascii():
        spelled = separated(text)  # one character for one: its positions are the text's
        for reading in dict.fromkeys((text, spelled)):
            folded = fold_positions(reading)
            if folded is not None:
                view, origin = folded
                spans.extend((origin[s], origin[e - 1] + 1) for s, e in _found(view) if s < e)
            elif reading is not text:  # nothing to fold: the separators are all that differ
                spans.extend(_found(reading))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _found(text: str) -> list[tuple[int, int]]:
    """Sorted, trimmed, non-empty ``(start, end)`` spans of credential values in ``text`` as it is."""
    spans: list[tuple[int, int]] = []
    for pattern in _COMPILED:
        spans.extend(_value_span(m) for m in pattern.finditer(text))
    windows = [(lo, hi, text[lo:hi]) for lo, hi in _windows(len(text))]
    for pattern, anchors in _plugin_patterns():
        for lo, hi, window in windows:
            if any(anchor in window for anchor in anchors):
                spans.extend(_value_span(m) for m in pattern.finditer(text, lo, hi))
    return sorted(span for s, e in spans if (span := _trimmed(text, s, e))[0] < span[1])
