"""`chaoskit measure hpa | rule-sync | node-loss`: the measurements, driven by chaoskit on a workload of its own."""

from __future__ import annotations

import uuid

import click

from chaoskit.cli import Globals
from chaoskit.cli.measure_node_loss import node_loss
from chaoskit.cli.measure_rule_sync import rule_sync
from chaoskit.cli.options import cluster_env, cluster_option, emit, output_option, stdout_console
from chaoskit.cli.stages import print_stages
from chaoskit.engine import sigterm_as_interrupt
from chaoskit.measurements.hpa_driver import measure as measure_hpa
from chaoskit.progress import Progress


@click.group()
def measure() -> None:
    """Measure HPA-to-Ready stage by stage, kube-proxy's rule-sync delay, or a node's loss, on the cluster as it is."""


measure.add_command(rule_sync)
measure.add_command(node_loss)


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
@cluster_option()
@output_option()
@click.pass_obj
def hpa(g: Globals, runs: int, trigger: str, max_replicas: int, cluster: str, output: str) -> None:
    """Scale an HPA-managed Deployment up and time its critical path: metric above target → HPA decision →
    ReplicaSet → Pod created → scheduled → started → Ready → EndpointSlice → rules on every node → first request
    from every node. Each stage names the component that owns it and the precision of its clock. The workload
    lives in a namespace of its own, deleted at the end."""
    ns = g.namespace or f"chaoskit-hpa-{uuid.uuid4().hex[:6]}"
    progress = Progress()
    with sigterm_as_interrupt():
        result = measure_hpa(cluster_env(g, cluster), ns, runs, trigger, max_replicas, say=progress.info)  # type: ignore[arg-type]
    if output != "table":
        emit(result.to_dict(), output)
    else:
        print_stages(result, stdout_console(110))
