"""A run (or a suite of runs) as one self-contained HTML page: the playbooks with their verdicts and when each ran
(a bar per playbook shows what overlapped), then per playbook its steady state, steps, thresholds in words, what the
diagnosis said while each fault held, each probe's phases and samples, the HPA-to-Ready timelines, and the
resilience score."""

from __future__ import annotations

from html import escape
from typing import Any

from markupsafe import Markup

from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.model.record import StepRecord
from chaoskit.reports.common import TEMPLATES, Record, measurements, seconds
from chaoskit.reports.svg import DRAWN, probe_svg, timeline_svg

VERDICT_COLOUR = {
    "passed": "#2da44e",
    "deviated": "#bf8700",
    "error": "#cf222e",
    "aborted": "#cf222e",
    "interrupted": "#cf222e",
}


def _gantt(runs: list[Record], width: int = 1040) -> str:
    """When each playbook ran, one bar each: what overlapped is what ran at the same time."""
    if not runs or "started_s" not in runs[0]:
        return ""
    end = max(float(r["finished_s"]) for r in runs) or 1.0
    label_w, row, scale = 260, 20, (width - 260 - 10) / end
    rows = []
    for i, r in enumerate(runs):
        start, finish = float(r["started_s"]), float(r["finished_s"])
        x, w = label_w + start * scale, max(2.0, (finish - start) * scale)
        y = 24 + i * row
        colour = VERDICT_COLOUR.get(str(r["verdict"]), "#8c959f")
        rows.append(
            f'<text class="bar-label" x="4" y="{y + 13}">{escape(str(r["playbook"]))}</text>'
            f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" fill="{colour}" rx="3">'
            f"<title>{escape(str(r['playbook']))}: {r['verdict']}, {seconds(r['started_s'])} to "
            f"{seconds(r['finished_s'])}</title></rect>"
        )
    height = 24 + len(runs) * row + 6
    axis = (
        f'<text class="bar-label" x="{label_w}" y="14">0s</text>'
        f'<text class="bar-label" x="{width - 60}" y="14">{seconds(end)}</text>'
    )
    return (
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="when each playbook ran">{axis}{"".join(rows)}</svg>'
    )


def _during(run: Record) -> list[dict[str, Any]]:
    out = []
    for d in run.get("diagnoses") or []:
        if d.get("when") != "during" or "fault" not in d:
            continue
        top = Diagnosis.from_dict(d["report"]).top_findings()[:4]
        out.append(
            {
                "fault": d["fault"],
                "node": d.get("node", ""),
                "named": d.get("named_s"),
                "besides": d.get("held_besides") or [],
                "top": top,
            }
        )
    return out


def render_run_html(record: Record) -> str:
    """The page for a suite record (SuiteRecord.to_dict()) or one run (RunRecord.to_dict())."""
    runs: list[Record] = list(record["runs"]) if "runs" in record else [record]
    timelines = {
        str(r["playbook"]): [
            Markup(timeline_svg(m))  # noqa: S704 - our SVG
            for m in [m for kind in DRAWN for m in measurements(r, kind)]
        ]
        for r in runs
    }
    problems = {str(r["playbook"]): _problems(r) for r in runs}
    return TEMPLATES.get_template("run.html.j2").render(
        name=record.get("suite") or record.get("playbook"),
        cluster=record.get("cluster", ""),
        verdict=record.get("verdict", ""),
        exit_code=record.get("exit_code", ""),
        parallel=record.get("parallel"),
        took=float(record.get("finished_at", 0)) - float(record.get("started_at", 0)),
        runs=runs,
        gantt=Markup(_gantt(runs)),  # noqa: S704 - built from escaped parts
        steps_ok={
            str(r["playbook"]): sum(1 for s in r.get("steps") or [] if StepRecord.from_dict(s).held) for r in runs
        },
        problems=problems,
        during={str(r["playbook"]): _during(r) for r in runs},
        timelines=timelines,
        probe_charts={
            str(r["playbook"]): {
                str(p["name"]): Markup(probe_svg(p, r.get("probe_windows") or {}))  # noqa: S704
                for p in r.get("probes") or []
            }
            for r in runs
        },
        score=record.get("score"),
    )


def _problems(run: Record) -> list[str]:
    steps = run.get("steps") or []
    return [e for s in steps for e in [*s.get("failures", []), *s.get("errors", [])]] + list(run.get("errors") or [])
