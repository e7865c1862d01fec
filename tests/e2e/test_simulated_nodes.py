"""A hundred simulated nodes (kwok) against the real control plane: they come Ready through kwok's heartbeats, no
DaemonSet lands on them, the diagnosis judges the real nodes only, and a stopped scheduler meets a backlog of pods
bound for them: none is bound while it is down, and the measurement times the drain once it is back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaoskit import workloads
from chaoskit.diagnosers.run import diagnose
from chaoskit.engine import run_fault
from chaoskit.env import Env
from chaoskit.faults.base import Fault
from chaoskit.journal import Journal
from chaoskit.measurements.backlog import BacklogParams, SchedulingBacklog, bound_pods
from chaoskit.model.kwok import SIMULATED_SELECTOR
from chaoskit.registry import FAULTS
from chaoskit.seams.kube import Kube, condition
from chaoskit.seams.nodecontainers import node_containers
from chaoskit.seams.shell import SubprocessRunner
from chaoskit.step import resolve
from tests.e2e.conftest import chaoskit, of_the_host
from tests.e2e.test_faults import wait_healthy

pytestmark = pytest.mark.e2e
NODES = 100
BACKLOG = 300  # pods created while the scheduler is down, every one bound for a simulated node


@pytest.fixture
def simulated(kube: Kube, cluster: str) -> Any:
    chaoskit("cluster", "kwok-nodes", str(NODES), "--cluster", cluster, timeout=600)
    try:
        yield
    finally:
        chaoskit("cluster", "kwok-nodes", "0", "--cluster", cluster, timeout=600)


def test_a_hundred_simulated_nodes_and_a_scheduler_back_to_a_backlog(
    kube: Kube, cluster: str, ns: str, simulated: Any, tmp_path: Path
) -> None:
    env = Env.for_kind(kube, cluster)
    nodes = kube.get("/api/v1/nodes", labelSelector=SIMULATED_SELECTOR)["items"]
    assert len(nodes) == NODES and all(condition(n, "Ready") for n in nodes), "kwok keeps them Ready"
    names = {n["metadata"]["name"] for n in nodes}
    system = kube.get("/api/v1/namespaces/kube-system/pods")["items"]
    assert not [p["metadata"]["name"] for p in system if p["spec"].get("nodeName") in names], "a DaemonSet landed"

    real = [n.name for n in node_containers(SubprocessRunner(), cluster)]
    report = diagnose(env, f"{cluster}-control-plane", real)
    subjects = {r.subject for r in report.reports}
    assert not subjects & names, subjects & names
    # ok, but for a slow spell the diagnosis itself lays on this host (etcd's measured latency, a busy CPU)
    said = [f.to_dict() for r in report.reports for f in r.findings if f.severity != "info"]
    print(f"\ndiagnosis with {NODES} simulated nodes: {report.status}; {[f['title'] for f in said]}")
    assert all(of_the_host(f) for f in said), said

    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    measurement = SchedulingBacklog(env, BacklogParams(namespace=ns, selector="app=backlog"), "backlog", ns)
    measurement.start()
    waiting: list[int] = []

    def make_backlog() -> None:  # the scheduler is down: pods are created, none is bound
        kube.apply(workloads.simulated_pods(ns, "backlog", BACKLOG))
        kube.wait(
            f"{BACKLOG} backlog pods created",
            lambda: bound_pods(kube, ns, "app=backlog")[0] == BACKLOG,
            120,
        )
        waiting.append(bound_pods(kube, ns, "app=backlog")[1])

    fault: Fault = FAULTS.get("scheduler.down")()  # type: ignore[assignment]
    step = resolve(fault, fault.Params(), env.nodes.list_nodes(), target="control-plane", duration=5)
    result = run_fault(env, step, journal=Journal(tmp_path / "j.jsonl"), on_effect=make_backlog)
    assert result.held, result.errors
    assert waiting == [0], f"pods were bound while the scheduler was down: {waiting}"
    kube.wait(f"{BACKLOG} backlog pods bound", lambda: bound_pods(kube, ns, "app=backlog")[1] == BACKLOG, 180, 1.0)
    res = measurement.stop()
    drain = res.extra["drain"]
    print(f"\nbacklog on {NODES} simulated nodes: {drain}\n" + "\n".join(res.notes))
    assert drain["bound"] == BACKLOG and drain["peak_waiting"] == BACKLOG, drain
    assert drain["rate"] is not None and drain["rate"] > 0 and drain["last_wait"] > 0, drain
    wait_healthy(env)
