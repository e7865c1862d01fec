"""A measurement's stages as a table: one row per stage on its critical path, with its owner and precision."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from chaoskit.cli.measure_rule_sync import precision_cell
from chaoskit.figures import seconds
from chaoskit.model.timeline import HPA_STAGES, MeasurementResult, Stage
from chaoskit.reports.table import new_table


def _s(v: float | None) -> str:
    return "—" if v is None else f"{seconds(v)}"


def print_stages(
    result: MeasurementResult,
    console: Console,
    stages: Sequence[Stage] = HPA_STAGES,
    title: str = "HPA-to-Ready",
) -> None:
    """One row per stage on the critical path, in order; — where too few samples make a percentile up."""
    summaries = result.summaries()
    table = new_table("stage", "owner", "count", "p50", "p90", "p99", "max", "precision", title=title)
    for stage in stages:
        sm = summaries.get(stage.name)
        if sm is None:
            table.add_row(stage.name, stage.component, "0", "—", "—", "—", "—", "")
            continue
        table.add_row(
            stage.name,
            stage.component,
            str(sm.count),
            _s(sm.p50),
            _s(sm.p90),
            _s(sm.p99),
            _s(sm.max),
            precision_cell(sm),
        )
    if total := summaries.get("total"):
        table.add_row(
            "total",
            "",
            str(total.count),
            _s(total.p50),
            _s(total.p90),
            _s(total.p99),
            _s(total.max),
            precision_cell(total),
            style="bold",
        )
    console.print(table)
    for line in [*result.notes, *(f"gap {seconds(g.end - g.start)}: {g.reason}" for g in result.gaps), *result.errors]:
        console.print(line)
