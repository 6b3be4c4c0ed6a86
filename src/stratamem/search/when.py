"""The time a query names ("in May", "last week", "2023", "yesterday"), as spans of the store's clock.

Pure: the query text and the store's ``now`` in, the named times out, each with the characters that named
it (so the lexical side can leave "last week" out of its terms). A search boosts the hits whose
``occurred_at`` falls in a named time (``session.search``); it never filters, so a memory whose time is
unknown or different still answers. English phrasing only; anything not recognised names no time.

What counts as naming a time, and why:
- ISO dates (``2023-05-08``), day-month-year and month-day-year (``8 May 2023``, ``May 8th, 2023``): that day.
- A month with a year (``May 2023``): that month. A month alone: that month in any year, since "what did
  she do in May?" is asked of memories of any year. "may", "march" and "august" are also ordinary words, so
  a month alone counts only after a word that introduces a time (in, during, since, until, last, this...)
  or when written capitalised.
- A year between 1900 and 2099 standing alone: that year.
- ``today``, ``yesterday``, ``this``/``last week``, ``this``/``last month``, ``this``/``last year``,
  ``N days/weeks/months ago``: relative to the store's clock, in UTC.
- A weekday (``on Monday``): that weekday in any week; ``last Monday``: the one before today.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from ..models import Hit

MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH_ABBREVIATIONS = {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"sept": 9}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
# How much a hit of a named time is lifted: its score times this (hybrid and semantic scores capped at 1).
TIME_BOOST = 1.5
# At most this many named times are read from one query: a question names one or two, and a hostile query
# of thousands of dates must cost one linear scan, not a check of each against all the others.
MAX_NAMED_TIMES = 8
# A search naming a time ranks at least this many candidates before the boost, then keeps its limit.
TIME_CANDIDATES = 30

_MONTH = r"(?P<month>" + "|".join([*MONTHS, "sept", *(m[:3] for m in MONTHS)]) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_INTRO = r"(?:in|during|since|until|till|before|after|by|of|from|through|last|this|next|early|late|mid|mid-)"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("iso", r"\b(?P<year>\d{4})-(?P<month>\d\d)-(?P<day>\d\d)\b"),
        ("dmy", rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}\b"),
        ("mdy", rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"),
        ("my", rf"\b{_MONTH},?\s+{_YEAR}\b"),
        ("relative", r"\b(?P<rel>today|yesterday|(?:this|last|past|previous)\s+(?:week|month|year))\b"),
        ("ago", r"\b(?P<n>\d{1,3}|a|an|one|two|three)\s+(?P<unit>day|week|month|year)s?\s+ago\b"),
        ("last_weekday", r"\blast\s+(?P<weekday>" + "|".join(WEEKDAYS) + r")\b"),
        ("weekday", r"\b(?P<weekday>" + "|".join(WEEKDAYS) + r")s?\b"),
        ("month", rf"(?:\b(?P<intro>{_INTRO})\s+)?\b{_MONTH}(?![\w-])"),
        ("year", rf"(?<![\d.,$€£-]){_YEAR}(?![\d.,%-]|\s*(?:dollars|euros|pounds|people|km|miles)\b)"),
    )
)
_SMALL = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}


@dataclass(frozen=True, slots=True)
class NamedTime:
    """One time a query names: a span ``[start, end)`` in UTC, or a month or weekday in any year/week."""

    phrase: tuple[int, int]  # the characters of the query that named it
    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None  # 1..12, any year
    weekday: int | None = None  # 0 = Monday, any week

    def holds(self, moment: datetime) -> bool:
        """Whether ``moment`` (aware) falls in this time."""
        at = moment.astimezone(UTC)
        if self.month is not None:
            return at.month == self.month
        if self.weekday is not None:
            return at.weekday() == self.weekday
        assert self.start is not None and self.end is not None
        return self.start <= at < self.end


def named_times(query: str, now: datetime) -> list[NamedTime]:
    """The times ``query`` names (the first ``MAX_NAMED_TIMES`` found), relative to ``now``; a character
    belongs to one named time at most."""
    taken: list[tuple[int, int]] = []
    found: list[NamedTime] = []
    for name, pattern in _PATTERNS:
        for match in pattern.finditer(query):
            if len(found) == MAX_NAMED_TIMES:
                return sorted(found, key=lambda n: n.phrase)
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            named = _read(name, match, now.astimezone(UTC))
            if named is not None:
                taken.append(span)
                found.append(named)
    return sorted(found, key=lambda n: n.phrase)


def boosted(hits: Sequence[Hit], times: Sequence[NamedTime], capped: bool) -> list[Hit]:
    """``hits`` with those of a named time lifted (score times ``TIME_BOOST``; capped at 1 when ``capped``:
    hybrid and semantic scores live in (0, 1]), best first; equal scores keep the backend's order.

    Each hit's new score depends on its own score and time alone, so the order stays a function of
    the session's visible hits (noninterference)."""
    if not times:
        return list(hits)
    lifted = []
    for hit in hits:
        score = hit.score
        if score > 0.0 and any(named.holds(hit.memory.occurred_at) for named in times):
            score = min(score * TIME_BOOST, 1.0) if capped else score * TIME_BOOST
        lifted.append(Hit(hit.memory, score))
    return sorted(lifted, key=lambda hit: -hit.score)


# Words that, beside a named time, ask for everything of that time ("what happened last week?").
GENERIC_WORDS = frozenset(
    [
        "happen",
        "happens",
        "happened",
        "happening",
        "do",
        "did",
        "done",
        "go",
        "went",
        "going",
        "say",
        "said",
        "talk",
        "talked",
        "event",
        "events",
        "thing",
        "things",
        "anything",
        "something",
        "everything",
        "new",
        "news",
        "up",
    ]
)


def only_times(content_words: Sequence[str], times: Sequence[NamedTime]) -> bool:
    """Whether a query asks about its named times alone: nothing but stopwords and generic words left
    once the words that named them are out ("what did she do in May?")."""
    return bool(times) and all(word in GENERIC_WORDS for word in content_words)


def without_phrases(query: str, times: list[NamedTime]) -> str:
    """``query`` with the words that named a time blanked, for the lexical side's terms."""
    chars = list(query)
    for named in times:
        start, end = named.phrase
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _read(name: str, match: re.Match[str], now: datetime) -> NamedTime | None:
    span = match.span()
    groups = match.groupdict()
    if name in ("iso", "dmy", "mdy"):
        day = _date(int(groups["year"]), _month(groups["month"]), int(groups["day"]))
        return _days(span, day, 1) if day else None
    if name == "my":
        month = _month(groups["month"])
        return _span(span, *_month_bounds(int(groups["year"]), month)) if month else None
    if name == "relative":
        return _relative(span, " ".join(groups["rel"].lower().split()), now)
    if name == "ago":
        n = int(groups["n"]) if groups["n"].isdigit() else _SMALL[groups["n"].lower()]
        return _ago(span, n, groups["unit"].lower(), now)
    if name == "last_weekday":
        weekday = WEEKDAYS.index(groups["weekday"].lower())
        back = (now.weekday() - weekday - 1) % 7 + 1
        return _days(span, now.date() - timedelta(days=back), 1)
    if name == "weekday":
        return NamedTime(span, weekday=WEEKDAYS.index(groups["weekday"].lower()))
    if name == "month":
        word = match.group("month")
        if not groups.get("intro") and not word[0].isupper():
            return None  # "may", "march": ordinary words unless a time is introduced or capitalised
        month = _month(word)
        if month is None:
            return None
        # Report only the month's characters: an introducing word ("in") stays in the query.
        return NamedTime(match.span("month"), month=month)
    year = int(groups["year"])
    return _span(span, datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _month(word: str) -> int | None:
    word = word.lower().rstrip(".")
    if word.isdigit():
        month = int(word)
        return month if 1 <= month <= 12 else None
    if word in MONTHS:
        return MONTHS.index(word) + 1
    return _MONTH_ABBREVIATIONS.get(word)


def _date(year: int, month: int | None, day: int) -> date | None:
    if month is None:
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _span(phrase: tuple[int, int], start: datetime, end: datetime) -> NamedTime:
    return NamedTime(phrase, start=start, end=end)


def _days(phrase: tuple[int, int], first: date, count: int) -> NamedTime:
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    try:
        return _span(phrase, start, start + timedelta(days=count))
    except OverflowError:  # the last days of year 9999
        return _span(phrase, start, datetime.max.replace(tzinfo=UTC))


def _month_bounds(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def _relative(phrase: tuple[int, int], words: str, now: datetime) -> NamedTime:
    today = now.date()
    if words == "today":
        return _days(phrase, today, 1)
    if words == "yesterday":
        return _days(phrase, today - timedelta(days=1), 1)
    which, unit = words.split()
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        return _days(phrase, monday if which == "this" else monday - timedelta(days=7), 7)
    if unit == "month":
        year, month = today.year, today.month
        if which != "this":
            year, month = (year, month - 1) if month > 1 else (year - 1, 12)
        return _span(phrase, *_month_bounds(year, month))
    year = today.year if which == "this" else today.year - 1
    return _span(phrase, datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _ago(phrase: tuple[int, int], n: int, unit: str, now: datetime) -> NamedTime | None:
    """``n`` units ago: that day for days, that week (Monday to Sunday), month or year otherwise."""
    today = now.date()
    if unit == "day":
        return _days(phrase, today - timedelta(days=n), 1) if n <= 36_500 else None
    if unit == "week":
        monday = today - timedelta(days=today.weekday() + 7 * n)
        return _days(phrase, monday, 7) if monday.year >= 1 else None
    if unit == "month":
        index = today.year * 12 + today.month - 1 - n
        return _span(phrase, *_month_bounds(index // 12, index % 12 + 1)) if index >= 12 else None
    year = today.year - n
    return (
        _span(phrase, datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
        if year >= 1
        else None
    )
