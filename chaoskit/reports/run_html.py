"""A run (or a suite of runs) as one self-contained HTML page: the playbooks with their verdicts and when each ran
(a bar per playbook shows what overlapped), then per playbook its steady state, steps, thresholds in words, each
measured timeline with the fault on it (held window shaded; inject, effect, revert and healthy marked) beside its
stage table and a caption saying which stage took the time and whose it was, what the diagnosis said while each
fault held, each probe's phases and samples, and the resilience score."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from markupsafe import Markup

from chaoskit.diagnosers.kit.base import Diagnosis, Finding
from chaoskit.figures import seconds
from chaoskit.model.record import RunRecord
from chaoskit.model.timeline import STAGE_COMPONENTS, Summary
from chaoskit.reports.common import TEMPLATES, measurements
from chaoskit.reports.faultwindow import Slowest, fault_windows, slowest_stage
from chaoskit.reports.runs import Placed, Suite, shown
from chaoskit.reports.svg import DRAWN, probe_svg, timeline_svg

VERDICT_COLOUR = {
    "passed": "#2da44e",
    "deviated": "#bf8700",
    "error": "#cf222e",
    "aborted": "#cf222e",
    "interrupted": "#cf222e",
}
BESIDE_WIDTH = 640  # the timeline's own width when its stage table sits beside it: its text near 1:1 on a wide page


def _gantt(runs: list[Placed], width: int = 1040) -> str:
    """When each playbook ran, one bar each: what overlapped is what ran at the same time."""
    placed = [(p, p.started_s, p.finished_s) for p in runs if p.started_s is not None and p.finished_s is not None]
    if not placed or len(placed) != len(runs):
        return ""
    end = max(finish for _, _, finish in placed) or 1.0
    label_w, row, scale = 260, 20, (width - 260 - 10) / end
    rows = []
    for i, (p, start, finish) in enumerate(placed):
        x, w = label_w + start * scale, max(2.0, (finish - start) * scale)
        y = 24 + i * row
        colour = VERDICT_COLOUR.get(p.record.verdict, "#8c959f")
        name = escape(p.record.playbook)
        rows.append(
            f'<text class="bar-label" x="4" y="{y + 13}">{name}</text>'
            f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" fill="{colour}" rx="3">'
            f"<title>{name}: {p.record.verdict}, {seconds(start)} to {seconds(finish)}</title></rect>"
        )
    height = 24 + len(runs) * row + 6
    axis = (
        f'<text class="bar-label" x="{label_w}" y="14">0s</text>'
        f'<text class="bar-label" x="{width - 60}" y="14">{seconds(end)}</text>'
    )
    return (
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="when each playbook ran">{axis}{"".join(rows)}</svg>'
    )


@dataclass(frozen=True)
class During:
    """What the diagnosis said while one fault held."""

    fault: str
    node: str
    named: float | None
    besides: list[str]
    top: tuple[Finding, ...]


def _during(run: RunRecord) -> list[During]:
    return [
        During(
            str(d["fault"]),
            str(d.get("node", "")),
            d.get("named_s"),
            list(d.get("held_besides") or []),
            Diagnosis.from_dict(d["report"]).top_findings()[:4],
        )
        for d in run.diagnoses
        if d.get("when") == "during" and "fault" in d
    ]


@dataclass(frozen=True)
class StageRow:
    stage: str
    owner: str
    summary: Summary
    slowest: bool  # the stage the caption names


@dataclass(frozen=True)
class Timeline:
    """A measurement as the page shows it: the drawing, the caption, the stage table beside."""

    name: str
    svg: Markup
    caption: str
    faulted: bool
    stages: list[StageRow]


def _timelines(run: RunRecord) -> list[Timeline]:
    faults = fault_windows(run.steps)
    out = []
    for m in [m for kind in DRAWN for m in measurements(run, kind)]:
        slow: Slowest | None = slowest_stage(m, faults, [s.fault for s in run.steps])
        owners = {s.stage: s.component for s in m.samples if s.component}
        rows = [
            StageRow(
                stage,
                owners.get(stage) or STAGE_COMPONENTS.get(stage, ""),
                summary,
                slow is not None and slow.stage == stage,
            )
            for stage, summary in m.summaries().items()
        ]
        svg = Markup(timeline_svg(m, BESIDE_WIDTH, faults))  # noqa: S704 - our SVG, built from escaped parts
        out.append(Timeline(m.name, svg, slow.caption() if slow else "", bool(slow and slow.faulted), rows))
    return out


def render_run_html(record: RunRecord | Suite) -> str:
    """The page for one run's record, or for a suite (suite.SuiteRecord)."""
    page = shown(record)
    runs = page.runs
    charts: dict[str, dict[str, Any]] = {
        p.record.playbook: {
            probe.name: Markup(probe_svg(probe, p.record.probe_windows))  # noqa: S704 - built from escaped parts
            for probe in p.record.probes
        }
        for p in runs
    }
    return TEMPLATES.get_template("run.html.j2").render(
        name=page.name,
        cluster=page.cluster,
        verdict=page.verdict,
        exit_code=page.exit_code,
        parallel=page.parallel,
        took=page.finished_at - page.started_at if page.finished_at else None,
        runs=runs,
        gantt=Markup(_gantt(runs)),  # noqa: S704 - built from escaped parts
        steps_ok={p.record.playbook: sum(1 for s in p.record.steps if s.held) for p in runs},
        problems={p.record.playbook: _problems(p.record) for p in runs},
        during={p.record.playbook: _during(p.record) for p in runs},
        timelines={p.record.playbook: _timelines(p.record) for p in runs},
        probe_charts=charts,
        score=page.score,
    )


def _problems(run: RunRecord) -> list[str]:
    return [e for s in run.steps for e in [*s.failures, *s.errors]] + list(run.errors)
