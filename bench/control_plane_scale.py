"""Benchmark: the real control plane with 0, 100, 500 and 1,000 simulated nodes (kwok), and what chaoskit costs there.

    python bench/control_plane_scale.py [--sizes 0,100,500,1000] [--backlog 300] [--deployments 100] [--window 15]
                                        [--json FILE] [--name chaoskit]

At each size: the API server's own figures over a window (requests a second, the slowest kinds of call against the
scalability SLOs, its memory, the Node and Lease writes the simulated heartbeats make); `chaoskit diagnose` (its wall
time, CPU seconds and API requests); and `scheduler.down` meeting a backlog of --backlog pods bound for simulated
nodes (none bound while it is down; once it is back, pods bound a second and the last pod's wait);
`controller-manager.down` while --deployments Deployments of simulated pods are scaled (from its return to the last
one Ready, and Deployments Ready a second); `apiserver.down` for 10 s (back, every client watching again, every
heartbeat renewed, and the re-lists' LIST rate). The simulated nodes are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaoskit import workloads
from chaoskit.checks.slo import API_SLI, SloParams, judge_api
from chaoskit.diagnosers.run import diagnose
from chaoskit.engine import run_fault
from chaoskit.env import Env, connect
from chaoskit.faults.base import Fault
from chaoskit.journal import Journal
from chaoskit.measurements.apiserver_recovery import ApiserverRecovery, RecoveryParams
from chaoskit.measurements.backlog import BacklogParams, SchedulingBacklog, bound_pods
from chaoskit.measurements.base import Measurement
from chaoskit.measurements.resync import ControllerResync, ResyncParams
from chaoskit.model.timeline import MeasurementResult
from chaoskit.registry import FAULTS, load_catalog
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodecontainers import node_containers
from chaoskit.seams.scrape import Metrics
from chaoskit.seams.shell import SubprocessRunner
from chaoskit.step import resolve

REQUESTS = [0]  # every API request any Kube client of this process made (the diagnosis makes bounded copies)
_request = Kube.request


def _counted(self: Kube, *args: Any, **kwargs: Any) -> Any:
    REQUESTS[0] += 1
    return _request(self, *args, **kwargs)


Kube.request = _counted  # type: ignore[method-assign]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def simulate(n: int, name: str) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "chaoskit", "cluster", "kwok-nodes", str(n), "--cluster", name], check=True)
    return time.monotonic() - started


def api_window(kube: Kube, window: float) -> dict[str, Any]:
    """The API server over `window` seconds: requests a second, its slowest calls against the SLOs, its memory."""
    before = Metrics.parse(kube.raw("/metrics"))
    time.sleep(window)
    after = Metrics.parse(kube.raw("/metrics"))
    judged = judge_api(before, after, SloParams())
    calls = sum(j.hist.count for j in judged)
    worst = sorted(judged, key=lambda j: -(j.hist.quantile(0.99) or 0.0) / j.limit)[:2]
    leases = next((j.hist.count for j in judged if j.what == "PUT leases (resource)"), 0.0)
    rss = after.value("process_resident_memory_bytes")
    return {
        "requests_per_s": calls / window,
        "lease_writes_per_s": leases / window,
        "slowest": [j.words() for j in worst],
        "breached": [j.words() for j in judged if j.breached],
        "apiserver_mib": None if rss is None else rss / 2**20,
        "sli_series": len(after.select(f"{API_SLI}_count")),
    }


def diagnosis_cost(env: Env, cluster: str) -> dict[str, Any]:
    real = [n.name for n in node_containers(SubprocessRunner(), cluster)]
    cpu, requests, started = _cpu(), REQUESTS[0], time.monotonic()
    found = diagnose(env, f"{cluster}-control-plane", real)
    return {
        "seconds": time.monotonic() - started,
        "cpu_seconds": _cpu() - cpu,
        "api_requests": REQUESTS[0] - requests,
        "status": found.status,
    }


def measured_fault(
    env: Env,
    fault_name: str,
    m: Measurement,
    duration: float,
    on_effect: Callable[[], None] | None = None,
    before_stop: Callable[[], object] | None = None,
) -> tuple[MeasurementResult, bool]:
    """`fault_name` held `duration` seconds on the control plane while `m` measures: its result, and whether the
    fault held. `on_effect` runs once the fault holds, `before_stop` after its revert."""
    m.start()
    fault: Fault = FAULTS.get(fault_name)()  # type: ignore[assignment]
    step = resolve(fault, fault.Params(), env.nodes.list_nodes(), target="control-plane", duration=duration)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            held = run_fault(env, step, journal=Journal(Path(tmp) / "j.jsonl"), on_effect=on_effect).held
        if before_stop is not None:
            before_stop()
    finally:
        result = m.stop()
    return result, held


def controller_catch_up(env: Env, deployments: int) -> dict[str, Any]:
    kube, ns = env.kube, f"chaoskit-bench-resync-{uuid.uuid4().hex[:5]}"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        m = ControllerResync(env, ResyncParams(deployments=deployments), "resync", ns)
        res, _ = measured_fault(env, "controller-manager.down", m, 15)
        return {**res.extra["resync"], "errors": res.errors}
    finally:
        kube.delete(f"/api/v1/namespaces/{ns}", propagation="Background")


def apiserver_outage(env: Env) -> dict[str, Any]:
    res, _ = measured_fault(env, "apiserver.down", ApiserverRecovery(env, RecoveryParams(), "recovery", "default"), 10)
    stages = {s.stage: s.seconds for s in res.samples}
    windows = res.extra["windows"]
    return {
        **stages,
        "watches": (res.extra["baseline"] or {}).get("watches"),
        "peak_lists_per_s": max((w["lists_per_s"] or 0.0 for w in windows), default=None),
        "peak_single_p99": max((w["single_p99"] or 0.0 for w in windows), default=None),
        "errors": res.errors,
    }


def backlog_drain(env: Env, pods: int) -> dict[str, Any]:
    kube, ns = env.kube, f"chaoskit-bench-backlog-{uuid.uuid4().hex[:5]}"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        m = SchedulingBacklog(env, BacklogParams(namespace=ns, selector="app=backlog"), "backlog", ns)
        during: list[int] = []

        def make_backlog() -> None:
            kube.apply(workloads.simulated_pods(ns, "backlog", pods))
            kube.wait("backlog created", lambda: bound_pods(kube, ns, "app=backlog")[0] == pods, 300)
            during.append(bound_pods(kube, ns, "app=backlog")[1])

        def all_bound() -> object:
            return kube.wait("backlog bound", lambda: bound_pods(kube, ns, "app=backlog")[1] == pods, 600, 1.0)

        res, held = measured_fault(env, "scheduler.down", m, 5, on_effect=make_backlog, before_stop=all_bound)
        drain = res.extra["drain"]
        return {**drain, "bound_while_down": during[0] if during else None, "held": held}
    finally:
        kube.delete(f"/api/v1/namespaces/{ns}", propagation="Background")


def _f(value: float | None, width: int, spec: str) -> str:
    """A figure right-aligned in `width`, or "—" where nothing was measured (never a 0 that was not seen)."""
    return f"{'—' if value is None else format(value, spec):>{width}}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="0,100,500,1000", help="simulated nodes, comma-separated")
    ap.add_argument("--backlog", type=int, default=300, help="pods created while the scheduler is down")
    ap.add_argument("--deployments", type=int, default=100, help="Deployments scaled while controller-manager is down")
    ap.add_argument("--window", type=float, default=15.0, help="seconds of the API server's window at each size")
    ap.add_argument("--json", type=Path, help="every row as JSON")
    ap.add_argument("--name", default="chaoskit", help="kind cluster name")
    args = ap.parse_args()
    load_catalog()
    env = connect(args.name, via="docker")
    kube = env.kube
    rows: list[dict[str, Any]] = []
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            row: dict[str, Any] = {"nodes": n, "simulate_s": simulate(n, args.name)}
            time.sleep(5)  # the new nodes' first heartbeats and the DaemonSets' settling out of the window
            row["api"] = api_window(kube, args.window)
            row["diagnose"] = diagnosis_cost(env, args.name)
            row["backlog"] = backlog_drain(env, args.backlog) if n else None
            row["resync"] = controller_catch_up(env, args.deployments) if n else None
            row["outage"] = apiserver_outage(env)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        simulate(0, args.name)
    print()
    head = (
        f"{'nodes':>6} {'up s':>5} {'API req/s':>9} {'lease w/s':>9} {'API MiB':>7} {'diag s':>6} {'diag CPU':>8} "
        f"{'diag req':>8} {'bound down':>10} {'drain/s':>7} {'last wait':>9}"
    )
    print(head)
    for r in rows:
        b, a, d = r["backlog"] or {}, r["api"], r["diagnose"]
        print(
            f"{r['nodes']:>6} {r['simulate_s']:>5.1f} {a['requests_per_s']:>9.1f} {a['lease_writes_per_s']:>9.1f} "
            f"{_f(a['apiserver_mib'], 7, '.0f')} {d['seconds']:>6.1f} {d['cpu_seconds']:>8.2f} {d['api_requests']:>8} "
            f"{b.get('bound_while_down', '—')!s:>10} {_f(b.get('rate'), 7, '.0f')} {_f(b.get('last_wait'), 9, '.1f')}"
        )
    print()
    print(
        f"{'nodes':>6} {'cm: last ready s':>16} {'deploy/s':>8} {'api back s':>10} {'watches s':>9} {'leases s':>8} "
        f"{'nodes ready s':>13} {'LIST/s peak':>11} {'p99 peak':>8}"
    )
    for r in rows:
        c, o = r["resync"] or {}, r["outage"]
        print(
            f"{r['nodes']:>6} {_f(c.get('last_ready_s'), 16, '.1f')} {_f(c.get('ready_per_s'), 8, '.1f')} "
            f"{_f(o.get('api_back'), 10, '.1f')} {_f(o.get('watches_back'), 9, '.1f')} "
            f"{_f(o.get('leases_renewed'), 8, '.1f')} {_f(o.get('nodes_ready'), 13, '.1f')} "
            f"{_f(o['peak_lists_per_s'], 11, '.0f')} {_f(o['peak_single_p99'], 8, '.2f')}"
        )
    for r in rows:
        print(f"{r['nodes']} nodes: slowest API calls: {'; '.join(r['api']['slowest'])}")
        for what in ("resync", "outage"):
            if (r[what] or {}).get("errors"):
                print(f"{r['nodes']} nodes: {what}: {'; '.join(r[what]['errors'])}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
