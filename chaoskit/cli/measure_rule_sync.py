"""`chaoskit measure rule-sync`: kube-proxy's rule-sync delay per node for endpoint changes chaoskit makes itself,
next to kube-proxy's own SLI."""

from __future__ import annotations

import uuid
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from chaoskit.cli import Globals
from chaoskit.cli.options import cluster_name_option, emit
from chaoskit.cluster.kube import Kube, KubeError
from chaoskit.cluster.nodeexec import DockerNodeExec
from chaoskit.cluster.shell import SubprocessRunner
from chaoskit.engine import sigterm_as_interrupt
from chaoskit.errors import UsageError
from chaoskit.faults.base import Env
from chaoskit.measurements.rule_sync import TYPE
from chaoskit.measurements.rule_sync_driver import CHANGES, parse_changes, run_changes
from chaoskit.model.timeline import RULE_SYNC_STAGES, MeasurementResult, summarize
from chaoskit.progress import Progress


@click.command("rule-sync")
@click.option(
    "--changes",
    "changes_text",
    default=",".join(CHANGES),
    show_default=True,
    help="Endpoint changes to make, in order, comma-separated.",
)
@click.option("--repeat", type=click.IntRange(1, 200), default=1, show_default=True, help="Times over the changes.")
@click.option(
    "--namespace",
    "namespace",
    help="Namespace to create for the workload and delete at the end; must not exist (default: a fresh one).",
)
@click.option("--timeout", type=click.FloatRange(5, 3600), default=60.0, show_default=True,
              help="Seconds each change may take to converge on every node.")  # fmt: skip
@cluster_name_option
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.pass_obj
def rule_sync(g: Globals, changes_text: str, repeat: int, namespace: str | None, timeout: float, name: str,
              output: str) -> None:  # fmt: skip
    """Measure kube-proxy's rule-sync delay: deploy a workload of its own, make each endpoint change in turn and
    time, per node, the rules holding the new endpoints and the requests following them; kube-proxy's own SLI
    (kubeproxy_network_programming_duration_seconds) is shown next to it. The namespace is deleted at the end."""
    changes = parse_changes(changes_text)
    ns = namespace or g.namespace or f"chaoskit-rule-sync-{uuid.uuid4().hex[:6]}"
    kube = Kube.connect(g.kubeconfig, g.context or f"kind-{name}")
    try:
        kube.get(f"/api/v1/namespaces/{ns}")
    except KubeError as exc:
        if "HTTP 404" not in str(exc):
            raise
    else:
        raise UsageError(f"namespace {ns} exists: rule-sync creates its own namespace and deletes it at the end")
    progress = Progress()
    with sigterm_as_interrupt():
        result = run_changes(Env(kube, DockerNodeExec(SubprocessRunner()), name), ns, changes, repeat,
                             converge_timeout=timeout, say=progress.info)  # fmt: skip
    if output == "json":
        emit(result.to_dict(), "json")
    else:
        print_result(result, Console(highlight=False))


def _s(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}s"


def print_result(result: MeasurementResult, console: Console) -> None:
    """Per stage and node: percentiles (— where too few samples to have one), then kube-proxy's SLI beside ours."""
    nodes: list[str] = result.extra.get("nodes") or sorted({s.subject.split("@", 1)[1] for s in result.samples})
    table = Table("stage", "node", "count", "p50", "p90", "max", "precision", "notes", title=f"{TYPE}: per node")
    for stage in RULE_SYNC_STAGES:
        for node in nodes:
            sm = summarize(s for s in result.samples if s.stage == stage.name and s.subject.endswith(f"@{node}"))
            notes = "; ".join(n for n in sm.notes if not n.startswith("p99"))
            table.add_row(stage.name, node, str(sm.count), _s(sm.p50), _s(sm.p90), _s(sm.max), f"±{sm.precision:g}s",
                          notes)  # fmt: skip
    console.print(table)
    proxy: dict[str, Any] = result.extra.get("kube_proxy") or {}
    if proxy:
        title = "kube-proxy's own SLI (network programming, from the trigger-time annotation, 1 s)"
        sli = Table("node", "SLI count", "SLI mean", "ours: rules_programmed mean", "ours from trigger-time mean",
                    "SLI − ours from trigger", "unmatched SLI obs.", "change waiting at stop", title=title)  # fmt: skip
        for node, row in proxy.items():
            d = row["sli"]
            sli.add_row(
                node,
                str(d["count"]) if not d["error"] else f"error: {d['error']}",
                _s(d["mean"]),
                _s(row["rules_programmed"]["mean"]),
                _s(row["ours_from_trigger"]["mean"]),
                _s(row["difference"]),
                "—" if row["unmatched"] is None else str(row["unmatched"]),
                _s(row["waiting_at_stop"]),
            )
        console.print(sli)
    for change in result.extra.get("changes", []):
        console.print(
            f"change {change['number']}: +{','.join(change['added']) or '—'} −{','.join(change['removed']) or '—'}"
            f" → {change['endpoints']} endpoints" + (" (seen late, not timed)" if change["late"] else "")
        )
    for line in [*result.notes, *(f"gap: {g.reason}" for g in result.gaps), *result.errors]:
        console.print(line)
