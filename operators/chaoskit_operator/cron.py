"""A 5-field cron schedule (minute hour day-of-month month day-of-week), read in UTC as Kubernetes' CronJob reads
it: numbers, `*`, ranges `a-b`, steps `*/n` and `a-b/n`, lists `a,b`, month and weekday names (JAN, MON), Sunday as
0 or 7, `?` as `*`, and the macros @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly. When both
day fields are restricted a day matches either (Vixie cron's rule; a stepped `*/2` restricts, as in CronJob's).

Pure: `previous` and `following` walk whole days and hours that cannot match, so a rare schedule (29 February) is
found in a few thousand steps, never minute by minute.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
FIELDS = (  # name, lowest, highest, names (the first is the lowest's)
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, MONTHS),
    ("day of week", 0, 7, WEEKDAYS),
)
SEARCH_YEARS = 5  # how far `previous` and `following` look: farther means never (30 February)


class CronError(ValueError):
    pass


@dataclass(frozen=True)
class Cron:
    """The minutes, hours, days, months and weekdays (0 Sunday) a schedule fires on."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool  # day of month was `*`
    any_weekday: bool  # day of week was `*`

    def day_matches(self, at: datetime) -> bool:
        if at.month not in self.months:
            return False
        by_day, by_weekday = at.day in self.days, (at.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return by_day and by_weekday  # the `*` one holds every day: only the other restricts
        return by_day or by_weekday

    def matches(self, at: datetime) -> bool:
        return self.day_matches(at) and at.hour in self.hours and at.minute in self.minutes

    def previous(self, at: datetime) -> datetime | None:
        """The latest minute at or before `at` (UTC) the schedule fires on; None within SEARCH_YEARS."""
        t = _utc(at).replace(second=0, microsecond=0)
        stop = t - timedelta(days=366 * SEARCH_YEARS)
        while t > stop:
            if not self.day_matches(t):
                t = t.replace(hour=23, minute=59) - timedelta(days=1)
            elif t.hour not in self.hours:
                t = t.replace(minute=59) - timedelta(hours=1)
            elif t.minute not in self.minutes:
                t -= timedelta(minutes=1)
            else:
                return t
        return None

    def following(self, at: datetime) -> datetime | None:
        """The first minute after `at` (UTC) the schedule fires on; None within SEARCH_YEARS."""
        t = _utc(at).replace(second=0, microsecond=0) + timedelta(minutes=1)
        stop = t + timedelta(days=366 * SEARCH_YEARS)
        while t < stop:
            if not self.day_matches(t):
                t = t.replace(hour=0, minute=0) + timedelta(days=1)
            elif t.hour not in self.hours:
                t = t.replace(minute=0) + timedelta(hours=1)
            elif t.minute not in self.minutes:
                t += timedelta(minutes=1)
            else:
                return t
        return None


def parse(expression: str) -> Cron:
    """The schedule `expression` says; CronError naming the field that is wrong."""
    text = MACROS.get(expression.strip().lower(), expression)
    fields = text.split()
    if len(fields) != len(FIELDS):
        raise CronError(f"{expression!r}: 5 fields (minute hour day-of-month month day-of-week), found {len(fields)}")
    values = [_field(f, *spec) for f, spec in zip(fields, FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in values[4])  # 7 is Sunday too
    minutes, hours, days, months = values[:4]
    return Cron(expression, minutes, hours, days, months, weekdays, _every(fields[2]), _every(fields[4]))


def _every(text: str) -> bool:
    """Whether a day field says `*` (or `?`, or `*/1`): one stepped as `*/2` restricts, as in CronJob's parser."""
    return any(part.partition("/")[0] in ("*", "?") and part.partition("/")[2] in ("", "1") for part in text.split(","))


def _field(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> frozenset[int]:
    out: set[int] = set()
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        step = _number(step_text, name, names=()) if step_text else 1
        if step < 1:
            raise CronError(f"{name}: step {step_text!r} must be 1 or more")
        if span in ("*", "?"):
            first, last = low, high
        elif "-" in span:
            a, _, b = span.partition("-")
            first, last = _number(a, name, names, low), _number(b, name, names, low)
        else:
            first = _number(span, name, names, low)
            last = high if step_text else first  # `5/15`: from 5 on, as `5-59/15`
        if not low <= first <= high or not low <= last <= high:
            raise CronError(f"{name}: {part!r} is outside {low}-{high}")
        if first > last:
            raise CronError(f"{name}: {part!r} runs backwards")
        out.update(range(first, last + 1, step))
    return frozenset(out)


def _number(text: str, name: str, names: tuple[str, ...], low: int = 0) -> int:
    if text.upper() in names:
        return names.index(text.upper()) + low
    if not text.isdigit():
        raise CronError(f"{name}: {text!r} is not a number" + (f" nor one of {', '.join(names)}" if names else ""))
    return int(text)


def _utc(at: datetime) -> datetime:
    return at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)
