"""One self-contained HTML report: inline CSS, inline SVG, no script and no external asset, so it can be attached
to a CI run or mailed and still render. The template is a package resource (templates/report.html.j2)."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from chaoskit.diagnosers.base import Diagnosis
from chaoskit.model.timeline import STAGE_COMPONENTS
from chaoskit.reports.common import Record, findings, measurements, observed, seconds, when
from chaoskit.reports.svg import timeline_svg

_ENV = Environment(
    loader=PackageLoader("chaoskit.reports", "templates"),
    autoescape=select_autoescape(["html", "j2"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters["seconds"] = seconds
_ENV.filters["when"] = when
_ENV.filters["observed"] = observed


def render_html(diagnosis: Diagnosis, record: Record | None = None) -> str:
    runs: list[dict[str, Any]] = []
    for m in measurements(record):
        svg = timeline_svg(m) if m.type == "hpa_scale_up" else ""
        runs.append({"m": m, "summaries": m.summaries(), "svg": Markup(svg)})  # noqa: S704 - our own escaped SVG
    return _ENV.get_template("report.html.j2").render(
        d=diagnosis,
        findings=list(findings(diagnosis)),
        record=record or {},
        measurements=runs,
        stage_components=STAGE_COMPONENTS,
    )
