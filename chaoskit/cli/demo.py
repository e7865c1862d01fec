"""`chaoskit demo`: the main job until playbooks land — an HPA scale-up and scale-down on the real cluster."""

from __future__ import annotations

import click

from chaoskit.cli import Globals
from chaoskit.cli.options import emit, output_option
from chaoskit.cluster.kube import Kube
from chaoskit.demo import run_hpa_demo
from chaoskit.errors import EXIT_BREACHED
from chaoskit.progress import Progress


@click.command()
@click.option("--name", default="chaoskit", show_default=True, help="kind cluster name (context kind-<name>).")
@click.option("--replicas", default=3, show_default=True, help="Ready replicas the HPA must reach.")
@click.option(
    "--timeout", default=300.0, show_default=True, help="Seconds allowed for each of scale-up and scale-down."
)
@click.option("--keep", is_flag=True, help="Keep the demo namespace afterwards.")
@output_option
@click.pass_obj
def demo(g: Globals, name: str, replicas: int, timeout: float, keep: bool, output: str) -> None:
    """Scale a CPU-loaded Deployment with an HPA, then stop the load; print the timeline."""
    progress = Progress()
    kube = Kube.connect(g.kubeconfig, g.context or f"kind-{name}")
    ns = g.namespace or "chaoskit-demo"
    r = run_hpa_demo(kube, ns, target_ready=replicas, timeout=timeout, keep=keep, say=progress.info)
    if output != "table":
        emit(
            {
                "namespace": r.namespace,
                "ok": r.ok,
                "peak_ready": r.peak_ready,
                "scaled_up_s": r.scaled_up_s,
                "scaled_down_s": r.scaled_down_s,
                "timeline": [{"t": e.t, "event": e.what} for e in r.timeline],
            },
            output,
        )
    else:
        for e in r.timeline:
            click.echo(f"{e.t:7.1f}s  {e.what}")
        up = f"{r.scaled_up_s:.0f}s" if r.scaled_up_s is not None else "not reached"
        down = f"{r.scaled_down_s:.0f}s" if r.scaled_down_s is not None else "not reached"
        click.echo(
            f"HPA scale-up to {replicas} ready replicas: {up} after load started; "
            f"back to 1 replica: {down} after load stopped"
        )
    if not r.ok:
        raise click.exceptions.Exit(EXIT_BREACHED)
