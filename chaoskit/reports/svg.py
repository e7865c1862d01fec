"""An inline SVG timeline of a measurement's critical path: one row per pod, one coloured segment per stage, a legend
naming the component that owns each stage, so the slow component is visible at a glance.

Plain SVG text, no script and no external reference, so the HTML report stays one self-contained file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from chaoskit.figures import seconds
from chaoskit.measurements.apiserver_recovery_tracker import STAGES as RECOVERY_STAGES
from chaoskit.measurements.resync_tracker import STAGES as RESYNC_STAGES
from chaoskit.model.record import ProbeRecord
from chaoskit.model.timeline import (
    HPA_STAGES,
    NODE_LOSS_STAGES,
    RULE_SYNC_STAGES,
    STAGE_COMPONENTS,
    MeasurementResult,
    Sample,
    run_level,
)
from chaoskit.reports.faultwindow import FaultWindow

# Colour-blind-safe palette (Okabe-Ito, then Tableau), one colour per stage in critical-path order.
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#999999",
    "#8C564B",
    "#17BECF",
    "#BCBD22",
)
ROW, LABEL, PAD, LEGEND_ROW, LEGEND_COLUMN = 22, 230, 12, 18, 300
# the measurements whose stages a report draws as a timeline
DRAWN = ("hpa_scale_up", "node_loss", "rule_sync", "apiserver_recovery", "controller_resync")
# each measurement's stages in their critical-path order: its colours and its legend follow it
STAGE_ORDERS = {
    "hpa_scale_up": [s.name for s in HPA_STAGES],
    "rule_sync": [s.name for s in RULE_SYNC_STAGES],
    "node_loss": [s.name for s in NODE_LOSS_STAGES],
    "apiserver_recovery": list(RECOVERY_STAGES),
    "controller_resync": list(RESYNC_STAGES),
}


def _colours(stages: list[str], kind: str) -> dict[str, str]:
    order = STAGE_ORDERS.get(kind, [])
    ordered = sorted(stages, key=lambda s: (order.index(s) if s in order else len(order), s))
    return {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(ordered)}


def _tick_step(span: float) -> float:
    """A round tick interval giving about six ticks."""
    raw = span / 6 if span > 0 else 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    return float(next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw))


def _row(subject: str, per_node: bool) -> str:
    what, _, node = subject.partition("@")
    return f"change {what} · {node}" if per_node and node else what


ROW_NOUNS = {"controller_resync": "Deployment(s)", "apiserver_recovery": "stage(s)"}  # else a row is a pod


def _counted(rows: Mapping[tuple[int, str], list[Sample]], per_node: bool, kind: str) -> str:
    if not per_node:  # a scale-up's or a lost node's own row is no pod
        return f"{sum(1 for _, label in rows if not run_level(label))} {ROW_NOUNS.get(kind, 'pod(s)')}"
    nodes = {label.rsplit(" · ", 1)[-1] for _, label in rows}
    return f"{len({run for run, _ in rows})} change(s) on {len(nodes)} node(s)"


def _natural(label: str) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", label))


FAULT_FILL, FAULT_LINE = "#fff1b8", "#9a6700"  # the held window, and its marks: amber, apart from every stage colour
MARK_BAND = 30  # above the rows: two lines of mark labels, staggered where marks fall close


MARK_CHAR = 6.5  # a mark label's width per character, near enough to keep it inside the drawing


def _mark_labels(marks: list[tuple[str, float]], x: Callable[[float], float], top: float, width: float) -> list[str]:
    """Each mark's line label, on the upper line unless the last label there would touch it; one that would run
    past an edge of the drawing ends (or starts) at its line instead of centring on it."""
    out, last = [], [-1e9, -1e9]
    for word, at in sorted(marks, key=lambda m: m[1]):
        px, half = x(at), MARK_CHAR * len(word) / 2
        line = 0 if px - last[0] > 56 else 1
        last[line] = px
        y = top - MARK_BAND + 11 + line * 13
        anchor = "end" if px + half > width else "start" if px - half < 0 else "middle"
        out.append(f'<text x="{px:.1f}" y="{y}" class="mark" text-anchor="{anchor}">{escape(word)}</text>')
    return out


def timeline_svg(m: MeasurementResult, width: int = 960, faults: Sequence[FaultWindow] = ()) -> str:
    """The stages as bars, a row per pod (or change); each fault step's held window shaded behind them, with its
    inject, effect, revert and healthy marked. It scales to the page's width (its viewBox, width 100%)."""
    samples = [s for s in m.samples if s.end >= s.start]
    if not samples:
        return ""
    # a scale-up's row is a pod (its stages on every node overlap); a rule sync's is one change on one node
    per_node = m.type == "rule_sync"
    rows: dict[tuple[int, str], list[Sample]] = {}
    for s in samples:
        rows.setdefault((s.run, _row(s.subject, per_node)), []).append(s)
    runs = {run for run, _ in rows}
    first, last = min(s.start for s in samples), max(s.end for s in samples)
    marks = [(w, at) for f in faults for w, at in f.marks()]
    t0, t1 = min([first, *(at for _, at in marks)]), max([last, *(at for _, at in marks)])  # the fault fits too
    span = max(t1 - t0, 1e-3)
    plot = width - LABEL - 2 * PAD
    stages = _colours(list(dict.fromkeys(s.stage for s in samples)), m.type)
    top = PAD + 24 + (MARK_BAND if marks else 0)
    bottom = top + len(rows) * ROW
    legend_top = bottom + 26
    columns = max(1, (width - 2 * PAD) // LEGEND_COLUMN)  # the legend in columns: as many rows as it needs, no more
    legend_rows = -(-len(stages) // columns) + (1 if faults else 0)
    height = legend_top + legend_rows * LEGEND_ROW + PAD

    def x(t: float) -> float:
        return LABEL + PAD + (t - t0) / span * plot

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="100%" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(m.name)} timeline">',
        f'<text x="{PAD}" y="{PAD + 10}" class="title">{escape(m.name)} ({escape(m.type)}): '
        f"{_counted(rows, per_node, m.type)}, {seconds(last - first)} from first to last stage</text>",
    ]
    for f in faults:  # behind the bars: the window the fault held
        x0, x1 = x(f.injected), x(f.held_until)
        out.append(
            f'<rect x="{x0:.1f}" y="{top - 4}" width="{max(x1 - x0, 1.0):.1f}" height="{bottom - top + 8}" '
            f'fill="{FAULT_FILL}"><title>{escape(f.fault)} on {escape(f.node)} held</title></rect>'
        )
    step = _tick_step(span)
    tick = 0.0
    while tick <= span + 1e-9:
        tx = x(t0 + tick)
        out.append(f'<line x1="{tx:.1f}" y1="{top - 4}" x2="{tx:.1f}" y2="{bottom}" class="grid"/>')
        out.append(f'<text x="{tx:.1f}" y="{bottom + 14}" class="tick">{seconds(tick)}</text>')
        tick += step
    # by start, then as people count (resync-2 before resync-10) where rows start together
    ordered = sorted(rows.items(), key=lambda kv: (kv[0][0], min(s.start for s in kv[1]), _natural(kv[0][1])))
    for i, ((run, pod), items) in enumerate(ordered):
        y = top + i * ROW
        label = f"run {run} · {pod}" if len(runs) > 1 and not per_node else pod  # a change is its own run
        out.append(f'<text x="{PAD}" y="{y + 15}" class="pod">{escape(label[-34:])}</text>')
        for s in sorted(items, key=lambda s: s.start):
            w = max(x(s.end) - x(s.start), 1.0)
            owner = s.component or STAGE_COMPONENTS.get(s.stage, "")
            tip = f"{s.stage} ({owner}): {seconds(s.seconds)} ±{seconds(s.precision)}"
            if "@" in s.subject:
                tip += f" on {s.subject.split('@', 1)[1]}"
            out.append(
                f'<rect x="{x(s.start):.1f}" y="{y + 3}" width="{w:.1f}" height="{ROW - 6}" '
                f'fill="{stages[s.stage]}"><title>{escape(tip)}</title></rect>'
            )
    for f in faults:  # over the bars: the moments, each named
        for word, at in f.marks():
            out.append(
                f'<line x1="{x(at):.1f}" y1="{top - 6}" x2="{x(at):.1f}" y2="{bottom + 2}" stroke="{FAULT_LINE}" '
                f'stroke-width="1.5" stroke-dasharray="4 3"><title>{escape(f.fault)}: {word} at '
                f"+{seconds(at - t0)}</title></line>"
            )
    out += _mark_labels(marks, x, top, width)
    owners = {s.stage: s.component for s in samples if s.component}  # the measurement's own word first
    for j, (stage, colour) in enumerate(stages.items()):
        y, lx = legend_top + (j // columns) * LEGEND_ROW, PAD + (j % columns) * LEGEND_COLUMN
        owner = owners.get(stage) or STAGE_COMPONENTS.get(stage, "")
        out.append(f'<rect x="{lx}" y="{y}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{lx + 18}" y="{y + 10}" class="legend">{escape(stage)} — {escape(owner)}</text>')
    if faults:  # a row of its own: the faults' words run long
        y = legend_top + (legend_rows - 1) * LEGEND_ROW
        held = ", ".join(f"{f.fault} on {f.node}" for f in faults)
        out.append(f'<rect x="{PAD}" y="{y}" width="12" height="12" fill="{FAULT_FILL}" stroke="{FAULT_LINE}"/>')
        out.append(f'<text x="{PAD + 18}" y="{y + 10}" class="legend">fault held — {escape(held)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def probe_svg(probe: ProbeRecord, windows: Mapping[str, Any], width: int = 960, height: int = 160) -> str:
    """One probe's samples over the run: a dot per sample (its latency or value; failed ones in red on the axis),
    the windows where a fault held shaded, each fault's effect a dashed line."""
    samples = probe.samples
    if not samples:
        return ""
    http = probe.kind == "http"
    t0 = min(s.at for s in samples)
    span = max(s.at for s in samples) - t0 or 1.0
    values = [float(s.value) * (1000 if http else 1) for s in samples if s.ok and s.value is not None]
    top = max(values, default=1.0) * 1.1 or 1.0
    left, bottom, plot_h = 60, height - 22, height - 40
    plot_w = width - left - PAD

    def x(t: float) -> float:
        return left + (t - t0) / span * plot_w

    def y(v: float) -> float:
        return bottom - v / top * plot_h

    parts = []
    for start, end in windows.get("during") or []:
        x0, x1 = x(max(start, t0)), x(min(end, t0 + span))
        parts.append(
            f'<rect x="{x0:.1f}" y="{bottom - plot_h}" width="{max(1.0, x1 - x0):.1f}" height="{plot_h}" '
            'fill="#fff8c5"><title>a fault held</title></rect>'
        )
    for at in windows.get("effects") or []:
        parts.append(
            f'<line x1="{x(at):.1f}" x2="{x(at):.1f}" y1="{bottom - plot_h}" y2="{bottom}" stroke="#bf8700" '
            'stroke-dasharray="4 3"><title>fault effect</title></line>'
        )
    unit = "ms" if http else ""
    for s in samples:
        at, ok, value = s.at, s.ok, s.value
        detail = escape(s.detail)
        if ok and value is not None:
            v = float(value) * (1000 if unit else 1)
            parts.append(
                f'<circle cx="{x(at):.1f}" cy="{y(v):.1f}" r="2" fill="#0072B2"><title>+{seconds(at - t0)}: '
                f"{v:.1f}{unit} {detail}</title></circle>"
            )
        elif ok:  # a pass with no value to plot (a condition, a command): on a line of its own, green
            parts.append(
                f'<circle cx="{x(at):.1f}" cy="{bottom - plot_h / 2:.1f}" r="3" fill="#2da44e"><title>'
                f"+{seconds(at - t0)}: passed {detail}</title></circle>"
            )
        else:
            parts.append(
                f'<circle cx="{x(at):.1f}" cy="{bottom:.1f}" r="3" fill="#cf222e"><title>+{seconds(at - t0)}: '
                f"failed: {detail}</title></circle>"
            )
    axes = (
        f'<line x1="{left}" x2="{width - PAD}" y1="{bottom}" y2="{bottom}" stroke="#8c959f"/>'
        f'<text class="bar-label" x="4" y="{bottom - plot_h + 10}">{top:.0f}{unit}</text>'
        f'<text class="bar-label" x="4" y="{bottom}">0{unit}</text>'
        f'<text class="bar-label" x="{left}" y="{height - 6}">+0s</text>'
        f'<text class="bar-label" x="{width - PAD - 40}" y="{height - 6}">+{seconds(span)}</text>'
    )
    label = escape(probe.name)
    return (
        f'<svg class="probe" xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="probe {label}: its samples over the run">{axes}{"".join(parts)}</svg>'
    )
