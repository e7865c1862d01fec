"""Moments as the JSON record writes them: RFC 3339 in UTC with a `Z` and microseconds (as Kubernetes' MicroTime: a
measured stage's ends keep the clock's resolution), read back from that or from the epoch seconds older records hold."""

from __future__ import annotations

from datetime import UTC, datetime

RUN_SCHEMA = "chaoskit.dev/run/v1"  # the run record's schemaVersion: a reader knows which shape it holds
SUITE_SCHEMA = "chaoskit.dev/suite/v1"
DIAGNOSIS_SCHEMA = "chaoskit.dev/diagnosis/v1"  # `chaoskit diagnose -o json`'s document


def rfc3339(at: float) -> str:
    """Epoch seconds as RFC 3339: 2026-12-06T20:15:30.123456Z."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def rfc3339_or_none(at: float | None) -> str | None:
    """A moment that may not have come (0 or None: not yet) as RFC 3339, else null."""
    return rfc3339(at) if at else None


def epoch(value: object) -> float | None:
    """A moment read back: RFC 3339 text, or the epoch seconds an older record holds; None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    raise ValueError(f"not a moment: {value!r}")


def file_stamp(at: float) -> str:
    """A moment for a file name, readable and sortable, with no character a shell or Windows minds:
    2026-12-06T201530Z."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H%M%SZ")


def stamped_name(name: str, at: float, suffix: str) -> str:
    """A file name for what a run wrote: scheduler-down-2026-12-06T201530Z.html (spaces made dashes)."""
    return f"{'-'.join(name.split())}-{file_stamp(at)}{suffix}"
