"""The ChaosSchedule's cron: the 5 fields as CronJob reads them in UTC, the day fields' either-rule, and the times
before and after an instant found without walking minute by minute."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from chaoskit_operator.cron import CronError, parse


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "minute", "fires"),
    [
        ("* * * * *", "2026-03-04T05:06", True),
        ("*/15 * * * *", "2026-03-04T05:45", True),
        ("*/15 * * * *", "2026-03-04T05:46", False),
        ("5/20 * * * *", "2026-03-04T05:45", True),  # from 5 on: 5, 25, 45
        ("0 9-17/4 * * *", "2026-03-04T13:00", True),  # 9, 13, 17
        ("0 9-17/4 * * *", "2026-03-04T12:00", False),
        ("30 2 * * MON-FRI", "2026-03-06T02:30", True),  # a Friday
        ("30 2 * * MON-FRI", "2026-03-07T02:30", False),  # a Saturday
        ("0 0 * * 7", "2026-03-08T00:00", True),  # 7 is Sunday, as 0
        ("0 0 1 jan,Jul *", "2026-07-01T00:00", True),
        ("0 0 13 * 5", "2026-02-13T00:00", True),  # both days restricted: the 13th or a Friday...
        ("0 0 13 * 5", "2026-03-06T00:00", True),  # ...a Friday that is not the 13th fires too
        ("0 0 13 * 5", "2026-03-07T00:00", False),
        ("0 0 */2 * *", "2026-03-03T00:00", True),  # odd days: 1, 3, ...
        ("0 0 */2 * *", "2026-03-02T00:00", False),
        ("0 0 */2 * 1", "2026-03-02T00:00", True),  # a stepped day field restricts (CronJob): a Monday fires
        ("0 0 ? * 1", "2026-03-03T00:00", False),  # `?` is `*`: only the weekday restricts
        ("@hourly", "2026-03-04T05:00", True),
        ("@daily", "2026-03-04T00:01", False),
    ],
)
def test_a_minute_fires_as_cronjob_would(expression: str, minute: str, fires: bool) -> None:
    assert parse(expression).matches(at(minute)) is fires


@pytest.mark.parametrize(
    ("expression", "said"),
    [
        ("* * * *", "5 fields"),
        ("60 * * * *", "minute: '60' is outside 0-59"),
        ("* 24 * * *", "hour: '24' is outside 0-23"),
        ("* * 0 * *", "day of month: '0' is outside 1-31"),
        ("* * * 13 *", "month: '13' is outside 1-12"),
        ("* * * * MOO", "day of week: 'MOO' is not a number nor one of SUN"),
        ("*/0 * * * *", "minute: step '0' must be 1 or more"),
        ("10-5 * * * *", "minute: '10-5' runs backwards"),
        ("1,,2 * * * *", "minute: '' is not a number"),
        ("@fortnightly", "5 fields"),
    ],
)
def test_a_bad_expression_is_refused_naming_its_field(expression: str, said: str) -> None:
    with pytest.raises(CronError, match=said.replace("*", r"\*")):
        parse(expression)


def test_previous_and_following_are_the_neighbouring_scheduled_minutes() -> None:
    every_15 = parse("*/15 * * * *")
    assert every_15.previous(at("2026-03-04T05:59:59")) == at("2026-03-04T05:45")
    assert every_15.previous(at("2026-03-04T05:45:00")) == at("2026-03-04T05:45")  # at the minute: that one
    assert every_15.following(at("2026-03-04T05:45:00")) == at("2026-03-04T06:00")  # strictly after
    assert every_15.following(at("2026-12-31T23:59")) == at("2027-01-01T00:00")


def test_an_instant_in_another_zone_is_read_in_utc() -> None:
    nine_in_paris = datetime(2026, 3, 4, 10, 0, tzinfo=timezone(timedelta(hours=1)))
    assert parse("0 9 * * *").previous(nine_in_paris) == at("2026-03-04T09:00")


def test_a_rare_schedule_is_found_quickly_and_an_impossible_one_never() -> None:
    t0 = time.monotonic()
    assert parse("0 12 29 2 *").previous(at("2027-06-01T00:00")) == at("2024-02-29T12:00")
    assert parse("0 12 29 2 *").following(at("2024-03-01T00:00")) == at("2028-02-29T12:00")
    assert parse("0 0 30 2 *").following(at("2026-01-01T00:00")) is None
    assert parse("0 0 30 2 *").previous(at("2026-01-01T00:00")) is None
    assert time.monotonic() - t0 < 1.0
