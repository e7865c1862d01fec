"""`chaoskit measure hpa | rule-sync`: the two measurements, driven by chaoskit on a workload of its own."""

from __future__ import annotations

import uuid

import click
from rich.console import Console
from rich.table import Table

from chaoskit.cli import Globals
from chaoskit.cli.measure_rule_sync import precision_cell, rule_sync
from chaoskit.cli.options import cluster_env, cluster_name_option, emit, stdout_console
from chaoskit.engine import sigterm_as_interrupt
from chaoskit.measurements.hpa_driver import measure as measure_hpa
from chaoskit.model.timeline import HPA_STAGES, MeasurementResult
from chaoskit.progress import Progress


@click.group()
def measure() -> None:
    """Measure HPA-to-Ready stage by stage, or kube-proxy's rule-sync delay, on the cluster as it is."""


measure.add_command(rule_sync)


@measure.command()
@click.option("--runs", type=click.IntRange(1, 100), default=1, show_default=True, help="Scale-ups to measure.")
@click.option(
    "--trigger",
    type=click.Choice(["load", "min-replicas"]),
    default="load",
    show_default=True,
    help="load: CPU load through metrics-server and the HPA; min-replicas: the HPA told to scale at once.",
)
@click.option("--max-replicas", type=click.IntRange(2, 50), default=4, show_default=True)
@cluster_name_option
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.pass_obj
def hpa(g: Globals, runs: int, trigger: str, max_replicas: int, name: str, output: str) -> None:
    """Scale an HPA-managed Deployment up and time its critical path: metric above target → HPA decision →
    ReplicaSet → Pod created → scheduled → started → Ready → EndpointSlice → rules on every node → first request
    from every node. Each stage names the component that owns it and the precision of its clock. The workload
    lives in a namespace of its own, deleted at the end."""
    ns = g.namespace or f"chaoskit-hpa-{uuid.uuid4().hex[:6]}"
    progress = Progress()
    with sigterm_as_interrupt():
        result = measure_hpa(cluster_env(g, name), ns, runs, trigger, max_replicas, say=progress.info)  # type: ignore[arg-type]
    if output == "json":
        emit(result.to_dict(), "json")
    else:
        print_stages(result, stdout_console(110))


def _s(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}s"


def print_stages(result: MeasurementResult, console: Console) -> None:
    """One row per stage on the critical path, in order; — where too few samples make a percentile up."""
    summaries = result.summaries()
    table = Table("stage", "owner", "count", "p50", "p90", "p99", "max", "precision", title="HPA-to-Ready")
    for stage in HPA_STAGES:
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
    for line in [*result.notes, *(f"gap {g.end - g.start:.1f}s: {g.reason}" for g in result.gaps), *result.errors]:
        console.print(line)
