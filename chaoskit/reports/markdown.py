"""The diagnosis as Markdown, for a pull request comment or a wiki page."""

from __future__ import annotations

from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.figures import seconds
from chaoskit.model.record import RunRecord
from chaoskit.reports.common import (
    SEVERITY_MARK,
    STATUS_MARK,
    explained,
    findings,
    measurements,
    observed,
    when,
    worst_first,
)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(diagnosis: Diagnosis, record: RunRecord | None = None) -> str:
    lines = [
        f"# chaoskit diagnosis of `{diagnosis.cluster}`: {diagnosis.status}",
        "",
        f"**{_cell(diagnosis.summary())}**",
        "",
        f"Collected {when(diagnosis.collected_at)} in {seconds(diagnosis.duration_s)}.",
        "",
    ]
    if record is not None:
        lines += [f"Run of playbook `{record.playbook}`: **{record.verdict}**.", ""]
    lines += ["| component | node | status | findings |", "|---|---|---|---|"]
    for r in worst_first(diagnosis):
        titles = "; ".join(f.title for f in r.findings if f.severity != "info") or "—"
        lines.append(f"| {r.component} | {r.subject} | {STATUS_MARK[r.status]} {r.status} | {_cell(titles)} |")
    found = list(findings(diagnosis))
    if found:
        lines += ["", "## Findings", ""]
    for report, f in found:
        lines += [
            f"### {SEVERITY_MARK[f.severity]} {f.severity}: {report.component} on {report.subject}: {f.title}",
            "",
            f"**Probable cause:** {f.probable_cause}",
            "",
            *([f"**Entity:** {', '.join(f'`{e}`' for e in f.entities)}", ""] if f.entities else []),
            *([f"**Because of:** `{f.caused_by}` (a consequence, not the root cause)", ""] if f.caused_by else []),
            *([f"**{explained(f).capitalize()}**", ""] if explained(f) else []),
            "**Evidence:**",
            "",
        ]
        for e in f.evidence:
            lines.append(f"- `{e.check}` from {e.source}: {observed(e) or 'see below'}")
            details = (*e.conditions, *e.events, *e.log_lines)
            if details:
                lines += ["", "  ```text", *(f"  {d}" for d in details[:12]), "  ```"]
        if f.remediation:
            lines += ["", "**Remediation:**", "", *(f"{i}. {step}" for i, step in enumerate(f.remediation, 1))]
        lines.append("")
    for m in measurements(record):
        lines += [
            "",
            f"## Measurement `{m.name}` ({m.type})",
            "",
            "| stage | count | p50 | p90 | p99 | max |",
            "|---|---|---|---|---|---|",
        ]
        for stage, s in m.summaries().items():
            lines.append(
                f"| {stage} | {s.count} | {seconds(s.p50)} | {seconds(s.p90)} | {seconds(s.p99)} | {seconds(s.max)} |"
            )
    lines += ["", "## Checks", "", "| component | node | check | seen |", "|---|---|---|---|"]
    for r in diagnosis.reports:
        for e in r.checks:
            seen = observed(e) if e.available else f"unavailable: {e.observed.get('error', '')}"
            lines.append(f"| {r.component} | {r.subject} | {e.check} | {_cell(seen)[:300]} |")
    return "\n".join(lines) + "\n"
