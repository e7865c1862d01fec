"""`chaoskit measure rule-sync`: kube-proxy's rule-sync delay per node for endpoint changes chaoskit makes itself,
next to kube-proxy's own SLI."""

from __future__ import annotations

import uuid
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from chaoskit.cli import Globals
from chaoskit.cli.options import cluster_env, cluster_option, emit, output_option, stdout_console
from chaoskit.engine import sigterm_as_interrupt
from chaoskit.errors import EXIT_BREACHED, UsageError
from chaoskit.figures import seconds
from chaoskit.measurements.background_services import MAX_SERVICES
from chaoskit.measurements.rule_sync import TYPE
from chaoskit.measurements.rule_sync_driver import CHANGES, parse_changes, run_changes
from chaoskit.model.timeline import MIN_SAMPLES, RULE_SYNC_STAGES, MeasurementResult, Summary, summarize
from chaoskit.progress import Progress
from chaoskit.reports.table import new_table

WIDTH = 120  # the tables' width when stdout is a pipe (rich would take 80 and wrap every cell)


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
@click.option(
    "--timeout",
    type=click.FloatRange(5, 3600),
    default=60.0,
    show_default=True,
    help="Seconds each change may take to converge on every node.",
)
@click.option(
    "--session-affinity",
    is_flag=True,
    help="The measured Service keeps each client on its pod (sessionAffinity ClientIP): requests are then timed "
    "following removed endpoints only, since no client moves to an added one.",
)
@click.option(
    "--services",
    type=click.IntRange(0, MAX_SERVICES),
    default=0,
    show_default=True,
    help="Background Services to make first (selectorless, endpoints at placeholder addresses, no pods), so that "
    "kube-proxy's rules hold as many Services as a cluster of that size; removed at the end.",
)
@click.option(
    "--endpoints-per-service",
    type=click.IntRange(1, 100),
    default=1,
    show_default=True,
    help="Endpoints of each background Service.",
)
@cluster_option()
@output_option()
@click.pass_obj
def rule_sync(
    g: Globals,
    changes_text: str,
    repeat: int,
    namespace: str | None,
    timeout: float,
    session_affinity: bool,
    services: int,
    endpoints_per_service: int,
    cluster: str,
    output: str,
) -> None:
    """Measure kube-proxy's rule-sync delay: deploy a workload of its own, make each endpoint change in turn and
    time, per node, the rules holding the new endpoints and the requests following them; kube-proxy's own SLI
    (kubeproxy_network_programming_duration_seconds) is shown next to it. The namespace is deleted at the end.

    Exit codes: 0 every change converged on every node, 1 one did not within --timeout, 2 usage, 4 tool error,
    130 interrupted.
    """
    changes = parse_changes(changes_text)
    ns = namespace or g.namespace or f"chaoskit-rule-sync-{uuid.uuid4().hex[:6]}"
    env = cluster_env(g, cluster)
    kube = env.kube
    if kube.find(f"/api/v1/namespaces/{ns}") is not None:
        raise UsageError(f"namespace {ns} exists: rule-sync creates its own namespace and deletes it at the end")
    progress = Progress()
    with sigterm_as_interrupt():
        result = run_changes(
            env,
            ns,
            changes,
            repeat,
            converge_timeout=timeout,
            say=progress.info,
            session_affinity=session_affinity,
            services=services,
            endpoints_per_service=endpoints_per_service,
        )
    if output != "table":
        emit(result.to_dict(), output)
    else:
        print_result(result, stdout_console(WIDTH))
    if unconverged := [a for a in result.extra.get("actions", []) if not a["converged"]]:
        click.secho(
            f"{len(unconverged)} change(s) did not converge on every node within {seconds(timeout)}", fg="red", err=True
        )
        raise click.exceptions.Exit(EXIT_BREACHED)


def _s(v: float | None) -> str:
    return "—" if v is None else f"{seconds(v)}"


def precision_cell(sm: Summary) -> str:
    """The samples' measured precision: one figure when they share it (a clock), else the typical one and the worst."""
    if sm.count == 0:
        return ""
    if sm.precision_median == sm.precision:
        return f"±{seconds(sm.precision)}"
    return f"±{seconds(sm.precision_median)} (max {seconds(sm.precision)})"


def _missing(count: int) -> str:
    """Why a percentile cell shows —: a percentile of too few samples would be invented."""
    short = [f"{name} needs ≥{MIN_SAMPLES[name]}" for name in ("p50", "p90") if count < MIN_SAMPLES[name]]
    return ", ".join(short) + " samples" if short else ""


def print_result(result: MeasurementResult, console: Console) -> None:
    """Per stage and node: percentiles (— where too few samples to have one), then kube-proxy's SLI beside ours."""
    nodes: list[str] = result.extra.get("nodes") or sorted({s.subject.split("@", 1)[1] for s in result.samples})
    table = new_table(
        "stage", "node", "n", "p50", "p90", "max", "precision", "note", title=f"{TYPE}: per endpoint change and node"
    )
    for stage in RULE_SYNC_STAGES:
        for node in nodes:
            sm = summarize(s for s in result.samples if s.stage == stage.name and s.subject.endswith(f"@{node}"))
            table.add_row(
                stage.name,
                node,
                str(sm.count),
                _s(sm.p50),
                _s(sm.p90),
                _s(sm.max),
                precision_cell(sm),
                _missing(sm.count),
            )
    console.print(table)
    console.print("precision: per sample, the spacing measured between the probe rounds that bracket its end")
    proxy: dict[str, Any] = result.extra.get("kube_proxy") or {}
    errors: list[str] = []
    if proxy:
        title = "kube-proxy's own SLI (network programming latency, from the trigger-time annotation: 1 s) and ours"
        sli = new_table(
            "node",
            "SLI n",
            "SLI mean",
            "ours: rules mean",
            "ours from trigger",
            "SLI − ours",
            "unmatched",
            "waiting",
            title=title,
        )
        for node, row in proxy.items():
            d = row["sli"]
            if d["error"]:
                errors.append(f"kube-proxy SLI on {node}: {d['error']}")
            sli.add_row(
                node,
                str(d["count"]) if not d["error"] else "no answer",
                _s(d["mean"]),
                _s(row["rules_programmed"]["mean"]),
                _s(row["ours_from_trigger"]["mean"]),
                _s(row["difference"]),
                "—" if row["unmatched"] is None else str(row["unmatched"]),
                _s(row["waiting_at_stop"]),
            )
        console.print(sli)
        console.print(
            "unmatched: SLI observations beyond this Service's slice updates (the histogram has no Service label); "
            "waiting: how long a queued change had waited for a sync at stop"
        )
    if background := result.extra.get("background"):
        console.print(background_line(background))
    if proxy:
        console.print(cost_table(proxy))
    for change in result.extra.get("changes", []):
        console.print(
            f"change {change['number']}: +{','.join(change['added']) or '—'} −{','.join(change['removed']) or '—'}"
            f" → {change['endpoints']} endpoints" + (" (seen late, not timed)" if change["late"] else "")
        )
    for line in [*result.notes, *(f"gap: {g.reason}" for g in result.gaps), *result.errors, *errors]:
        console.print(line)


def background_line(background: dict[str, Any]) -> str:
    """How long the background Services took: the API to accept them, then each node's kube-proxy to program them."""
    programmed = ", ".join(f"{node} {_s(s)}" for node, s in background["programmed_s"].items())
    return (
        f"{background['services']} background Services: accepted by the API in {seconds(background['accepted_s'])}, "
        f"then programmed by kube-proxy in {programmed}"
    )


def _mb(v: float | None) -> str:
    return "—" if v is None else f"{v / 2**20:.0f} MiB"


def cost_table(proxy: dict[str, Any]) -> Table:
    """kube-proxy's own work per node over the measurement: its syncs, its rules, its CPU and memory."""
    table = new_table(
        "node",
        "full syncs",
        "full mean",
        "partial syncs",
        "partial mean",
        "partial p90",
        "iptables rules",
        "CPU",
        "memory",
        title="kube-proxy's own work while measuring (its metrics)",
    )
    for node, row in proxy.items():
        cost = row.get("cost") or {}
        if cost.get("error"):
            table.add_row(node, "no answer", *[""] * 7)
            continue
        full, partial = cost["full_syncs"], cost["partial_syncs"]
        cpu = cost["cpu_seconds"]
        table.add_row(
            node,
            str(full["count"]),
            _s(full["mean"]),
            str(partial["count"]),
            _s(partial["mean"]),
            _s(partial["p90"]),
            "—" if cost["rules"] is None else f"{cost['rules']:.0f}",
            "—" if cpu is None else f"{seconds(cpu)} in {seconds(cost['seconds'])}",
            _mb(cost["rss_bytes"]),
        )
    return table
