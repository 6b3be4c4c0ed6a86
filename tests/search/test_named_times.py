"""The times a query names (search/when.py): what counts, relative to the store's clock, and what does not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from stratamem.search.when import named_times, without_phrases

NOW = datetime(2026, 12, 4, 10, 30, tzinfo=UTC)  # a Friday


def spans(query: str) -> list[tuple[str, datetime | None, datetime | None, int | None, int | None]]:
    return [
        (query[n.phrase[0] : n.phrase[1]], n.start, n.end, n.month, n.weekday)
        for n in named_times(query, NOW)
    ]


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def test_dates_as_people_write_them_name_that_day() -> None:
    for query in ("on 2023-05-08", "events of 8 May 2023", "May 8th, 2023 party", "the 8th of May, 2023"):
        [(_, start, end, _, _)] = spans(query)
        assert (start, end) == (day(2023, 5, 8), day(2023, 5, 9)), query


def test_a_month_with_a_year_and_a_year_alone() -> None:
    assert spans("in May 2023") == [("May 2023", day(2023, 5, 1), day(2023, 6, 1), None, None)]
    assert spans("trips in December 2025") == [
        ("December 2025", day(2025, 12, 1), day(2026, 1, 1), None, None)
    ]
    assert spans("what happened in 2023?") == [("2023", day(2023, 1, 1), day(2024, 1, 1), None, None)]


def test_a_month_alone_is_that_month_in_any_year_but_may_the_verb_is_no_month() -> None:
    assert spans("what did she do in May?") == [("May", None, None, 5, None)]
    assert spans("what did she do in may?") == [("may", None, None, 5, None)]
    assert spans("you may go now") == []
    assert spans("we march at dawn") == []
    [named] = named_times("in May", NOW)
    assert named.holds(day(2019, 5, 31)) and not named.holds(day(2019, 6, 1))


def test_relative_times_follow_the_store_clock() -> None:
    assert spans("yesterday") == [("yesterday", day(2026, 12, 3), day(2026, 12, 4), None, None)]
    assert spans("today") == [("today", day(2026, 12, 4), day(2026, 12, 5), None, None)]
    assert spans("last week") == [("last week", day(2026, 11, 23), day(2026, 11, 30), None, None)]
    assert spans("this month") == [("this month", day(2026, 12, 1), day(2027, 1, 1), None, None)]
    assert spans("last month") == [("last month", day(2026, 11, 1), day(2026, 12, 1), None, None)]
    assert spans("last year") == [("last year", day(2025, 1, 1), day(2026, 1, 1), None, None)]
    assert spans("three days ago") == [("three days ago", day(2026, 12, 1), day(2026, 12, 2), None, None)]
    assert spans("last Monday") == [("last Monday", day(2026, 11, 30), day(2026, 12, 1), None, None)]
    january = datetime(2027, 1, 10, tzinfo=UTC)
    [named] = named_times("last month", january)
    assert (named.start, named.end) == (day(2026, 12, 1), day(2027, 1, 1))


def test_a_weekday_is_that_weekday_in_any_week() -> None:
    [named] = named_times("what do we do on Fridays?", NOW)
    assert named.weekday == 4 and named.holds(NOW) and not named.holds(NOW + timedelta(days=1))


def test_numbers_that_are_not_years_and_impossible_dates_name_nothing() -> None:
    assert spans("it cost 2023 dollars") == []
    assert spans("version 2023.1") == []
    assert spans("on 2023-02-30") == []
    assert spans("in 1850") == []


def test_the_last_day_representable_does_not_overflow() -> None:
    [named] = named_times("9999-12-31", NOW)
    assert named.holds(datetime(9999, 12, 31, 12, tzinfo=UTC))


def test_the_words_that_named_a_time_leave_the_lexical_query() -> None:
    query = "what did Caroline paint last week"
    assert without_phrases(query, named_times(query, NOW)).split() == ["what", "did", "Caroline", "paint"]


@given(st.text(max_size=200))
def test_any_text_parses_without_error_and_phrases_lie_inside_it(query: str) -> None:
    found = named_times(query, NOW)
    for named in found:
        start, end = named.phrase
        assert 0 <= start < end <= len(query)
    assert len(without_phrases(query, found)) == len(query)


def test_a_query_of_thousands_of_dates_yields_a_bounded_few() -> None:
    from stratamem.search.when import MAX_NAMED_TIMES

    for query in ("in may " * 14_000, "8th of May, 2023 " * 5_000, "last week " * 9_000):
        assert len(named_times(query, NOW)) == MAX_NAMED_TIMES
