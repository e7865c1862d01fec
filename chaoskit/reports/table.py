"""The terminal view: one row per component and node, then every finding with its cause and what to do."""

from __future__ import annotations

import io
import sys
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.figures import seconds
from chaoskit.model.record import RunRecord
from chaoskit.reports.common import (
    SEVERITY_MARK,
    STATUS_MARK,
    explained,
    findings,
    measurements,
    when,
    worst_first,
)

STATUS_STYLE = {"ok": "green", "degraded": "yellow", "failed": "bold red", "unknown": "dim"}
SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}


def new_table(*headers: str, **options: Any) -> Table:
    """A table for stdout: drawn on a terminal; in a pipe plain columns with no box drawing, as kubectl prints."""
    if not sys.stdout.isatty():
        options = {"box": None, "show_edge": False, "pad_edge": False, **options}
    return Table(*headers, **options)


def renderables(diagnosis: Diagnosis, record: RunRecord | None = None) -> RenderableType:
    """What the table view shows, for a Console to print (with colour on a terminal)."""
    summary = new_table(
        "component",
        "node",
        "status",
        "checks",
        "findings",
        title=f"chaoskit diagnose "
        f"{diagnosis.cluster} — {diagnosis.status} ({when(diagnosis.collected_at)}, "
        f"{seconds(diagnosis.duration_s)})",
    )
    for r in worst_first(diagnosis):
        counts = {s: sum(1 for f in r.findings if f.severity == s) for s in ("critical", "warning", "info")}
        summary.add_row(
            r.component,
            r.subject,
            Text(f"{STATUS_MARK[r.status]} {r.status}", style=STATUS_STYLE[r.status]),
            str(len(r.checks)),
            ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "—",
        )
    parts: list[RenderableType] = [Text(diagnosis.summary(), style="bold"), summary]
    for report, f in findings(diagnosis):
        head = Text(f"{SEVERITY_MARK[f.severity]} {f.severity:<8} ", style=SEVERITY_STYLE[f.severity])
        head.append(f"{report.component} on {report.subject}: ", style="bold")
        head.append(f.title)
        body = [head, Text(f"    cause: {f.probable_cause}")]
        body += [Text(f"    entity: {', '.join(f.entities)}")] if f.entities else []
        body += [Text(f"    because of: {f.caused_by}", style="bold")] if f.caused_by else []
        body += [Text(f"    {line}")] if (line := explained(f)) else []
        for e in f.evidence:
            for line in (*e.conditions, *e.events, *e.log_lines)[:4]:
                body.append(Text(f"    | {line[:200]}", style="dim"))
        body += [Text(f"    → {step}") for step in f.remediation]
        parts.append(Group(*body))
    for m in measurements(record):
        t = new_table("stage", "count", "p50", "p90", "p99", "max", title=f"measurement {m.name} ({m.type})")
        for stage, s in m.summaries().items():
            t.add_row(stage, str(s.count), seconds(s.p50), seconds(s.p90), seconds(s.p99), seconds(s.max))
        parts.append(t)
    return Group(*parts)


def render_table(diagnosis: Diagnosis, record: RunRecord | None = None) -> str:
    """The table view as plain text (for a file, or a pipe)."""
    out = io.StringIO()
    Console(file=out, width=140, color_system=None, highlight=False).print(renderables(diagnosis, record))
    return out.getvalue()
