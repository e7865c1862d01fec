"""Benchmark: kube-proxy's rule-sync delay against the number of Services, per proxy mode.

    python bench/rule_sync_scale.py [--sizes 100,1000,3000,10000] [--modes iptables,nftables,ipvs] [--repeat 4]
                                    [--html rule-sync-scale.html] [--json rule-sync-scale.json] [--name chaoskit]

A workload of its own (chaoskit's web Deployment, in a namespace it deletes at the end) and background Services
(selectorless, endpoints at placeholder addresses, no pods: kube-proxy programs them all the same) grown to each size
in turn. At each size, --repeat rounds of scale-up, scale-down and pod-deleted, each timed on every node by the
rule-sync measurement: rules_programmed and traffic_follows, p50/p90/max pooled over the nodes, beside kube-proxy's
own figures (its SLI, full and partial syncs, iptables rules, CPU and memory) and what chaoskit itself spent (its
process's CPU, its API requests, the in-node probe's CPU).

The first mode walks the sizes up, the next one down, and so on: each Service is made once. IPVS is skipped, with the
reason, where the kernel has no ip_vs. The mode found at the start is restored at the end.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaoskit.cluster import versions
from chaoskit.components.kube_proxy import (
    PROXY_MODES,
    ProxyModeUnsupported,
    configured_mode,
    proxied_nodes,
    set_mode,
)
from chaoskit.env import Env, connect
from chaoskit.measurements.background_services import BackgroundServices, resize_and_wait
from chaoskit.measurements.rule_sync_driver import CHANGES, Workload, initial_replicas, measure_changes
from chaoskit.progress import Progress
from chaoskit.reports.rule_sync_scale import render_html, row, table_lines


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def host() -> str:
    cores = len(os.sched_getaffinity(0))
    memory = Path("/proc/meminfo").read_text().split()[1]
    return f"{platform.node()}: {cores} cores, {int(memory) // 2**20} GiB, kernel {platform.release()}"


def measure_size(
    env: Env,
    workload: Workload,
    mode: str,
    size: int,
    grown: dict[str, Any] | None,
    repeat: int,
    say: Callable[[str], None],
) -> dict[str, Any]:
    sequence = [c for _ in range(repeat) for c in CHANGES]
    cpu, requests = _cpu(), env.kube.requests
    result = measure_changes(env, workload, sequence, say=say)
    cost = {"cpu_seconds": _cpu() - cpu, "api_requests": float(env.kube.requests - requests)}
    r = row(mode, size, result, grown, cost)
    r["notes"] = [n for n in result.notes if "did not converge" in n or "never held" in n]
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000,3000,10000", help="background Services, comma-separated")
    ap.add_argument("--modes", default=",".join(PROXY_MODES), help="kube-proxy modes, comma-separated")
    ap.add_argument("--repeat", type=int, default=4, help="rounds of scale-up, scale-down, pod-deleted per size")
    ap.add_argument("--html", type=Path, default=Path("rule-sync-scale.html"), help="the page drawing the curves")
    ap.add_argument("--json", type=Path, help="every row as JSON")
    ap.add_argument("--name", default="chaoskit", help="kind cluster name")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    say = Progress().info
    env = connect(args.name, via="docker")
    kube = env.kube
    nodes = proxied_nodes(kube)
    start_mode = configured_mode(kube)
    workload = Workload(kube, f"chaoskit-bench-scale-{uuid.uuid4().hex[:5]}", initial_replicas(CHANGES))
    background = BackgroundServices(kube)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    started = time.monotonic()
    try:
        workload.deploy()
        for m, mode in enumerate(args.modes.split(",")):
            try:
                if set_mode(kube, env.nodes, mode, say=say) and background.count:
                    # the new kube-proxy programs every Service there already is: that is a full sync at this size
                    grown = resize_and_wait(env.nodes, nodes, background, background.count, say=say)
                    seen = [v for v in grown["programmed_s"].values() if v is not None]
                    slowest = f"{max(seen):.1f}s" if seen else "— (none seen programmed)"
                    missed = len(grown["programmed_s"]) - len(seen)
                    notes.append(
                        f"{mode}: switched with {background.count} Services, all programmed in {slowest}"
                        + (f"; {missed} node(s) never seen programmed" if missed else "")
                    )
            except ProxyModeUnsupported as exc:
                notes.append(f"{mode} skipped: {exc}")
                say(f"{mode} skipped: {exc}")
                continue
            for size in sizes if m % 2 == 0 else list(reversed(sizes)):
                # kube-proxy's bulk work only where the size changed (a mode's first size may be the last one's)
                grown = (
                    resize_and_wait(env.nodes, nodes, background, size, say=say) if size != background.count else None
                )
                r = measure_size(env, workload, mode, size, grown, args.repeat, say)
                rows.append(r)
                say(
                    f"{mode} at {size} Services: rules p50 {r['rules_programmed']['p50']}, "
                    f"traffic p50 {r['traffic_follows']['p50']}"
                )
    finally:
        say("removing the background Services and the workload")
        background.remove()
        workload.delete()
        set_mode(kube, env.nodes, start_mode, say=say)
    context = {
        "when": datetime.date.today().isoformat(),
        "host": host(),
        "kubernetes": versions.KUBERNETES,
        "nodes": len(nodes),
        "repeat": args.repeat,
        "notes": notes + [n for r in rows for n in r["notes"]],
        "minutes": (time.monotonic() - started) / 60,
    }
    for line in table_lines(rows):
        print(line)
    for note in context["notes"]:
        print(note)
    print(f"{context['when']}, {context['host']}, {context['minutes']:.1f} min")
    args.html.write_text(render_html(rows, context))
    print(f"curves: {args.html.resolve()}")
    if args.json:
        args.json.write_text(json.dumps({"context": context, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
