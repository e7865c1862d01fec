"""What several renderers share: findings in reading order, status words, run-record fields, number formats, and
paths as a reader's own machine spells them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from chaoskit.diagnosers.kit.base import STATUS_ORDER, ComponentReport, Diagnosis, Evidence, Finding
from chaoskit.figures import seconds
from chaoskit.model.factcheck import observed_words
from chaoskit.model.record import RunRecord
from chaoskit.model.thresholds import ThresholdResult
from chaoskit.model.timeline import MeasurementResult

STATUS_MARK = {"ok": "✓", "degraded": "!", "failed": "✗", "unknown": "?"}
SEVERITY_MARK = {"critical": "✗", "warning": "!", "info": "i"}


def findings(diagnosis: Diagnosis) -> Iterator[tuple[ComponentReport, Finding]]:
    """Every finding with its report: the root causes first, then their consequences, each critical first, info
    last."""
    order = {"critical": 0, "warning": 1, "info": 2}
    pairs = [(r, f) for r in diagnosis.reports for f in r.findings]
    yield from sorted(pairs, key=lambda rf: (order[rf[1].severity] == 2, bool(rf[1].caused_by), order[rf[1].severity]))


def worst_first(diagnosis: Diagnosis) -> list[ComponentReport]:
    """The reports, failed first, then degraded, unknown, ok; the troubleshooting order within each."""
    return sorted(diagnosis.reports, key=lambda r: STATUS_ORDER[r.status])


def explained(f: Finding, limit: int = 3) -> str:
    """What a finding owns, in one line: "explains: a; b (+4 more)"."""
    others = [s for s in f.explains if s != f.title]  # a symptom that became its own finding is not said twice
    if not others:
        return ""
    more = f" (+{len(others) - limit} more)" if len(others) > limit else ""
    return "explains: " + "; ".join(s[:160] for s in others[:limit]) + more


def when(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def observed(e: Evidence) -> str:
    """One line of what a check saw: its observed values and metric values, absent ones left out."""
    parts = [f"{k}={v}" for k, v in e.observed.items() if v is not None and v != ""]
    parts += [f"{k}={v:g}" for k, v in e.metrics.items()]
    return ", ".join(parts)


def measurements(record: RunRecord | None, kind: str | None = None) -> list[MeasurementResult]:
    """The record's measurements, of one type if `kind` is given."""
    if record is None:
        return []
    return [m for m in record.measurements if kind is None or m.type == kind]


def threshold_words(t: ThresholdResult) -> str:
    """A threshold as a sentence: "scale-up: max of total ≤ 120s"."""
    limits = (("≥", t.min), ("≤", t.max))
    bound = " and ".join(f"{sign} {seconds(limit)}" for sign, limit in limits if limit is not None)
    return f"{t.measurement}: {t.stat} of {t.stage or 'total'} {bound}".strip()


def shown_path(path: str | Path) -> str:
    """A path as a report shows it: relative to the working directory when under it, else with ~ for the home
    directory, so a report mailed or attached to CI names no one's home."""
    text = str(path)
    if not text or not os.path.isabs(text):
        return text
    here, home = Path.cwd(), Path.home()
    p = Path(text)
    if p.is_relative_to(here) and here != home:
        return str(p.relative_to(here))
    if p.is_relative_to(home):
        return str(Path("~") / p.relative_to(home))
    return text


# The HTML pages' templates (package resources under templates/), with the filters they share.
TEMPLATES = Environment(
    loader=PackageLoader("chaoskit.reports", "templates"),
    autoescape=select_autoescape(["html", "j2"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
TEMPLATES.filters.update(
    explained=explained,
    seconds=seconds,
    when=when,
    observed=observed,
    threshold=threshold_words,
    facts=observed_words,
    path=shown_path,
)
