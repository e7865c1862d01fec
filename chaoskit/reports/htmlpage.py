"""One self-contained HTML report: inline CSS, inline SVG, no script and no external asset, so it can be attached
to a CI run or mailed and still render. The template is a package resource (templates/report.html.j2)."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.model.record import RunRecord
from chaoskit.model.timeline import STAGE_COMPONENTS
from chaoskit.reports.common import TEMPLATES, findings, measurements, worst_first
from chaoskit.reports.svg import DRAWN, timeline_svg


def render_html(diagnosis: Diagnosis, record: RunRecord | None = None) -> str:
    runs: list[dict[str, Any]] = []
    for m in measurements(record):
        svg = timeline_svg(m) if m.type in DRAWN else ""
        runs.append({"m": m, "summaries": m.summaries(), "svg": Markup(svg)})  # noqa: S704 - our own escaped SVG
    return TEMPLATES.get_template("report.html.j2").render(
        d=diagnosis,
        findings=list(findings(diagnosis)),
        reports_worst_first=worst_first(diagnosis),
        record=record,
        measurements=runs,
        stage_components=STAGE_COMPONENTS,
    )
