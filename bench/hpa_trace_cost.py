"""Benchmark: what tracing HPA-to-Ready costs, over 200 pod start-ups (4 scale-ups of 50 pods by default), and the
per-stage baseline those start-ups give (with 200 samples, p99 exists).

    python bench/hpa_trace_cost.py [--pods-per-run 50] [--runs 4] [--cluster chaoskit] [--kwok-nodes N]

Prints CPU seconds of chaoskit's process (watch threads, probe readers, metrics poll) and of its `docker exec`
clients, peak memory (RSS and Python heap), API requests made, probe lines read, and p50/p90/p99/max per stage.
The loops inside the nodes run in the nodes' cgroups and are not counted here. With --kwok-nodes N the cluster holds
N simulated nodes meanwhile (removed after): the tracing's cost at that size.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
import uuid

from chaoskit import workloads
from chaoskit.env import connect
from chaoskit.measurements.base import TargetParams
from chaoskit.measurements.hpa_driver import READY_TIMEOUT, one_run
from chaoskit.measurements.hpa_scale_up import HpaScaleUp
from chaoskit.model.timeline import HPA_STAGES


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods-per-run", type=int, default=50)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--cluster", default="chaoskit")
    ap.add_argument("--kwok-nodes", type=int, default=0, help="simulated nodes in the cluster meanwhile")
    args = ap.parse_args()
    if args.kwok_nodes:
        simulate(args.kwok_nodes, args.cluster)
    try:
        trace(args)
    finally:
        if args.kwok_nodes:
            simulate(0, args.cluster)


def simulate(n: int, cluster: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "chaoskit", "cluster", "kwok-nodes", str(n), "--cluster", cluster], check=True
    )


def trace(args: argparse.Namespace) -> None:
    env = connect(args.cluster, via="docker")
    kube = env.kube
    ns = f"chaoskit-bench-{uuid.uuid4().hex[:6]}"
    top = args.pods_per_run + 1
    # requests small enough for 50 pods on two 2-CPU workers; idle pods (probes every 1 s) then sit at ~28 % of the
    # 50 % target, which can hold the HPA above one pod, so each run's scale-back is driven (hpa_driver.scale_back)
    for obj in (
        workloads.namespace(ns),
        workloads.web_deployment(ns, cpu_request="25m"),
        workloads.service(ns),
        workloads.hpa(ns, max_replicas=top),
    ):
        kube.apply(obj)
    try:
        kube.wait("one ready pod", lambda: workloads.ready_replicas(kube, ns) >= 1, READY_TIMEOUT)
        tracemalloc.start()
        requests0, cpu0, wall0 = kube.requests, time.process_time(), time.monotonic()
        children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        m = HpaScaleUp(env, TargetParams(), "bench", ns)
        m.start()
        lines = [0]
        seen = m.tracker.seen

        def counting(s):  # type: ignore[no-untyped-def]
            lines[0] += 1
            seen(s)

        m.tracker.seen = counting  # type: ignore[method-assign]
        try:
            for _ in range(args.runs):
                one_run(env, m, ns, "min-replicas", top, 0, print)
        finally:
            result = m.stop()
        cpu = time.process_time() - cpu0
        wall = time.monotonic() - wall0
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        child_cpu = (children.ru_utime + children.ru_stime) - (children0.ru_utime + children0.ru_stime)
        _, heap_peak = tracemalloc.get_traced_memory()
        pods = len({s.subject for s in result.samples if s.stage == "ready"})
        print(f"\npod start-ups traced: {pods} in {args.runs} scale-ups, {wall:.0f}s wall")
        print(
            f"chaoskit CPU: {cpu:.1f}s in-process + {child_cpu:.1f}s docker exec clients "
            f"({1000 * (cpu + child_cpu) / max(pods, 1):.0f} ms per pod start-up)"
        )
        print(
            f"peak memory: RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB, "
            f"Python heap {heap_peak / 2**20:.1f} MiB"
        )
        print(f"API requests: {kube.requests - requests0} (watches count once; metrics polls every 2 s)")
        print(f"probe lines read: {lines[0]}; gaps: {len(result.gaps)}")
        summaries = result.summaries()
        print(f"\n{'stage':20} {'owner':19} {'n':>4} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}  precision")
        for stage in [s.name for s in HPA_STAGES] + ["total"]:
            sm = summaries.get(stage)
            if sm is None:
                continue
            owner = next((s.component for s in HPA_STAGES if s.name == stage), "")
            cells = " ".join(f"{v:8.3f}" if v is not None else f"{'—':>8}" for v in (sm.p50, sm.p90, sm.p99, sm.max))
            print(f"{stage:20} {owner:19} {sm.count:4} {cells}  ±{sm.precision:g}s")
        print(json.dumps({"notes": result.notes[:5]}))
    finally:
        kube.delete(f"/api/v1/namespaces/{ns}", propagation="Background")


if __name__ == "__main__":
    main()
