"""Benchmark: how long `chaoskit diagnose` takes end to end on a healthy cluster, with etcd frozen and with
kube-apiserver frozen (SIGSTOP of the process inside the control-plane node), and which finding it puts first.

    python bench/diagnose_hung.py [--cluster chaoskit] [--runs 1] [--budget 12] [--json] [-v]

Each frozen case arms a safety inside the node before it freezes anything (a detached shell that sends SIGCONT to
etcd and kube-apiserver after 90 s, so a benchmark killed mid-case never leaves them stopped), always resumes the
process itself, disarms the safety, and waits for the cluster to be healthy again before the next case: /readyz,
every node Ready, every control-plane pod Ready (the controller manager and the scheduler lose their lease while
the API server is frozen, exit, and come back after kubelet's crash-loop backoff). It stops the control plane for
about 15 s per case: run it under the cluster lock.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from chaoskit.cluster.kind import control_plane
from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.diagnosers.run import BUDGET
from chaoskit.seams.kube import Kube, KubeError, condition
from chaoskit.seams.shell import Completed, SubprocessRunner

CASES: dict[str, str | None] = {"healthy": None, "etcd frozen": "etcd", "apiserver frozen": "kube-apiserver"}
SAFETY_S = 90  # longer than any diagnosis, even the 60 s ones from before the budget
SAFETY_PID = "/tmp/chaoskit-bench-safety.pid"
# the controller manager and the scheduler exit when a frozen API server costs them their lease, and kubelet restarts
# them with its crash-loop backoff (up to 5 min after a few freezes): nothing to hurry, so wait that out
HEALTHY_TIMEOUT = 360.0
TARGET_S = {"healthy": 2.0, "frozen": 5.0}  # what a look in a loop during an incident may cost
# the object-level tool users run beside chaoskit: it reads objects only (no node, no metrics window)
K8SGPT = "k8sgpt analyze answered a healthy 3-node kind cluster on this kind of 2-core host in 0.2-1.1 s"


@dataclass(frozen=True)
class Figure:
    case: str
    wall_s: float  # the CLI end to end, as a user waits for it
    collect_s: float  # the diagnosis's own duration (collection and judgement)
    status: str
    top: str  # the first of the top findings, "component: title"


def node_sh(node: str, script: str, *, detach: bool = False, check: bool = True) -> Completed:
    argv = ["docker", "exec", *(["-d"] if detach else []), node, "sh", "-c", script]
    return SubprocessRunner().run(argv, check=check, timeout=30)


@contextmanager
def frozen(node: str, process: str) -> Iterator[None]:
    """`process` stopped inside `node` while the block runs; resumed whatever happens."""
    node_sh(
        node,
        f"echo $$ >{SAFETY_PID}; sleep {SAFETY_S}; pkill -CONT -x etcd; pkill -CONT -x kube-apiserver",
        detach=True,
    )
    try:
        node_sh(node, f"pkill -STOP -x {process}")
        state = node_sh(node, f"ps -o stat= -p $(pgrep -x {process} | head -n1)").stdout.strip()
        if not state.startswith("T"):
            raise RuntimeError(f"{process} on {node} is in state {state!r} after SIGSTOP, not stopped")
        yield
    finally:
        node_sh(node, f"pkill -CONT -x {process}", check=False)
        node_sh(node, f'kill "$(cat {SAFETY_PID})" 2>/dev/null; rm -f {SAFETY_PID}', check=False)


def unhealthy(kube: Kube) -> str:
    """What is not healthy yet ("" when nothing): /readyz, a node not Ready, a control-plane pod not Ready."""
    if (readyz := kube.raw("/readyz").strip()) != "ok":
        return f"/readyz: {readyz[:100]}"
    if nodes := [n["metadata"]["name"] for n in kube.get("/api/v1/nodes")["items"] if not condition(n, "Ready")]:
        return f"nodes not Ready: {', '.join(nodes)}"
    pods = kube.get("/api/v1/namespaces/kube-system/pods", labelSelector="tier=control-plane")["items"]
    waiting = [p["metadata"]["name"] for p in pods if not condition(p, "Ready")]
    return f"control-plane pods not Ready: {', '.join(waiting)}" if waiting or not pods else ""


def wait_healthy(kube: Kube) -> None:
    last = [""]

    def check() -> bool:
        last[0] = unhealthy(kube)
        return not last[0]

    try:
        kube.wait("the cluster to be healthy", check, HEALTHY_TIMEOUT, interval=2)
    except KubeError as exc:
        raise KubeError(f"{exc}; still {last[0]}") from exc


def diagnose(case: str, cluster: str, budget: float, verbose: bool) -> Figure:
    argv = [sys.executable, "-m", "chaoskit", "diagnose", "-o", "json", "--cluster", cluster, "--budget", f"{budget:g}"]
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=os.environ)
    wall = time.monotonic() - t0
    if verbose:  # the CLI's progress: when each component's report was done, and how long it took
        print(done.stderr, end="", file=sys.stderr)
    if done.returncode not in (0, 1):  # 1: something is degraded or failed, which is what a frozen case expects
        raise RuntimeError(f"chaoskit diagnose exited {done.returncode}: {done.stderr[-500:]}")
    d = Diagnosis.from_dict(json.loads(done.stdout)["diagnosis"])
    top = d.top_findings()
    return Figure(case, wall, d.duration_s, d.status, f"{top[0].component}: {top[0].title}" if top else "—")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cluster", default="chaoskit", help="kind cluster name")
    ap.add_argument("--runs", type=int, default=1, help="diagnoses per case")
    ap.add_argument("--budget", type=float, default=BUDGET, help="chaoskit diagnose --budget")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="show each diagnosis's progress lines")
    args = ap.parse_args()
    kube = Kube.connect(None, f"kind-{args.cluster}").bounded((3.0, 5.0))
    node = control_plane(SubprocessRunner(), args.cluster)
    figures: list[Figure] = []
    for case, process in CASES.items():
        for _ in range(args.runs):
            wait_healthy(kube)
            if process is None:
                figures.append(diagnose(case, args.cluster, args.budget, args.verbose))
            else:
                with frozen(node, process):
                    figures.append(diagnose(case, args.cluster, args.budget, args.verbose))
            f = figures[-1]
            print(f"{f.case}: {f.wall_s:.1f}s ({f.status}; {f.top})", file=sys.stderr)
    if args.json:
        print(json.dumps({"budget_s": args.budget, "figures": [asdict(f) for f in figures]}, indent=2))
    else:
        print(f"chaoskit diagnose, budget {args.budget:g}s (wall: the CLI end to end; collect: the diagnosis itself)")
        print(f"{'case':18} {'wall':>7} {'collect':>8}  {'target':>7}  {'status':9} top finding")
        for f in figures:
            target = TARGET_S["healthy" if f.case == "healthy" else "frozen"]
            print(f"{f.case:18} {f.wall_s:6.1f}s {f.collect_s:7.1f}s  {target:6.0f}s  {f.status:9} {f.top}")
        print(f"reference: {K8SGPT}")
    t0 = time.monotonic()
    wait_healthy(kube)  # the figures are out first: a slow recovery must not cost them
    print(f"cluster healthy again {time.monotonic() - t0:.0f}s after the last case", file=sys.stderr)


if __name__ == "__main__":
    main()
