"""One controller stuck inside the real kube-controller-manager, and a ResourceQuota refusing a scale-out's pods.

controller-manager.controller-stuck: while the chosen controller does no work, kube-controller-manager keeps
renewing its leader lease and answers /healthz ok, a real workload does not converge where that controller owns the
step (no pod for a raised ReplicaSet, no scale for an HPA, no Service entry for a Ready pod), and the diagnosis names
that controller, never the process. After the revert the workload converges.
controller-manager.quota-exhausted: the ReplicaSet's creations are refused with FailedCreate "exceeded quota", every
component stays healthy, the diagnosis names the quota, its namespace and used/hard, and the HPA-to-Ready
measurement shows the scale-up waiting at pod creation.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from chaoskit import workloads
from chaoskit.checks.cluster import ClusterHealthy
from chaoskit.cluster.kube import Kube
from chaoskit.cluster.nodeexec import DockerNodeExec
from chaoskit.cluster.shell import SubprocessRunner
from chaoskit.diagnosers.base import Diagnosis
from chaoskit.diagnosers.metrics import Metrics, scrape_command
from chaoskit.diagnosers.run import diagnose
from chaoskit.engine import run_fault
from chaoskit.faults.base import Env, NoParams
from chaoskit.faults.controller_manager import LEASE, ControllerStuck, ControllerStuckParams, StuckName
from chaoskit.faults.quota import QuotaExhausted, QuotaParams
from chaoskit.journal import Journal
from chaoskit.measurements.base import TargetParams
from chaoskit.measurements.hpa_scale_up import HpaScaleUp
from chaoskit.model.timeline import api_time

NAMED_WITHIN = 60.0
HEALTHZ = "https://127.0.0.1:10257/healthz?verbose"
METRICS = "https://127.0.0.1:10257/metrics"
# the controller's name in the finding that must come first, per controller
NAMED = {
    "replicaset": r"ReplicaSet controller \(replicaset-controller\) does no work",
    "horizontalpodautoscaling": r"HPA controller \(horizontal-pod-autoscaler-controller\) was not started",
    "endpointslice": r"EndpointSlice controller \(endpointslice-controller\) was not started",
}
COMPONENTS = ("apiserver", "etcd", "scheduler", "kubelet", "kube-proxy", "runtime")  # all but the controller manager
PROCESS_BLAMED = re.compile(r"kube-controller-manager is (stopped|not running)|No kube-controller-manager is leading")


@pytest.fixture
def env(kube: Kube, cluster: str) -> Env:
    env = Env(kube, DockerNodeExec(SubprocessRunner()), cluster)
    kube.wait("the cluster to be healthy", lambda: ClusterHealthy().run(env, NoParams()).ok, 240, interval=2)
    return env


def _sh(env: Env, script: str) -> str:
    return env.nodes.run(f"{env.cluster}-control-plane", ["sh", "-c", script], check=False, timeout=30).stdout


def _lease(env: Env) -> tuple[str, float]:
    spec = env.kube.get(LEASE)["spec"]
    return spec["holderIdentity"], api_time(spec["renewTime"]) or 0.0


def _queue(env: Env, queue: str) -> tuple[float | None, float | None]:
    """(depth, items worked on) of one of kube-controller-manager's work queues; None where it has no such queue."""
    names = ("workqueue_depth", "workqueue_work_duration_seconds_count")
    m = Metrics.parse(_sh(env, scrape_command(METRICS, names, client_cert=True)))
    return m.group(names[0], "name").get(queue), m.group(names[1], "name").get(queue)


def _deployment(kube: Kube, ns: str) -> dict[str, Any]:
    d: dict[str, Any] = kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/web")
    return d


def _scale(kube: Kube, ns: str, replicas: int) -> None:
    kube.patch(f"/apis/apps/v1/namespaces/{ns}/deployments/web", {"spec": {"replicas": replicas}})


def _ready_in_service(kube: Kube, ns: str) -> int:
    slices = kube.get(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
                      labelSelector="kubernetes.io/service-name=web")["items"]  # fmt: skip
    return sum(1 for s in slices for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready"))


def _diagnose_until(env: Env, pattern: str, component: str = "controller-manager") -> tuple[float | None, Diagnosis]:
    """Diagnose until the top finding is `component`'s and matches `pattern`: (seconds it took, last diagnosis)."""
    nodes = [f"{env.cluster}-{n}" for n in ("control-plane", "worker", "worker2")]
    t0 = time.monotonic()
    while True:
        found = diagnose(env, nodes[0], nodes)
        top = found.top_findings()
        if top and top[0].component == component and re.search(pattern, top[0].title):
            return time.monotonic() - t0, found
        if time.monotonic() - t0 > NAMED_WITHIN:
            return None, found
        time.sleep(2)


def _web(kube: Kube, ns: str, replicas: int = 1) -> None:
    kube.apply(workloads.web_deployment(ns, replicas=replicas))
    kube.apply(workloads.service(ns))
    kube.wait("web ready", lambda: workloads.ready_replicas(kube, ns) >= replicas, 120)


@pytest.mark.parametrize("controller", ["replicaset", "horizontalpodautoscaling", "endpointslice"])
def test_one_controller_stuck_while_the_process_leads_and_is_healthy(
    controller: StuckName, env: Env, kube: Kube, ns: str, tmp_path: Path
) -> None:
    _web(kube, ns)
    seen: dict[str, Any] = {}

    def while_stuck() -> None:
        seen["inject_to_effect"] = time.monotonic() - t0  # the restart and the new leader, then the effect
        holder, renewed = _lease(env)
        depth0, done0 = _queue(env, "replicaset")
        # the workload step this controller owns
        if controller == "replicaset":
            _scale(kube, ns, 2)  # the Deployment controller raises the ReplicaSet; no pod follows
        elif controller == "horizontalpodautoscaling":
            kube.apply(workloads.hpa(ns, min_replicas=2, max_replicas=3))  # asks for 2 at once; nobody acts on it
        else:
            _scale(kube, ns, 2)  # a second pod starts and gets Ready, and never enters the Service
        seen["named_after"], found = _diagnose_until(env, NAMED[controller])
        seen["top"] = [f"{f.severity} {f.component}: {f.title}" for f in found.top_findings()[:3]]
        seen["diagnosis_s"] = found.duration_s
        seen["process_blamed"] = [f.title for r in found.reports for f in r.findings if PROCESS_BLAMED.search(f.title)]
        time.sleep(max(0.0, 20 - (seen["named_after"] or NAMED_WITHIN)))  # long enough for a lease to renew often
        seen["lease"] = (holder, renewed, *_lease(env))
        seen["healthz"] = _sh(env, f"curl -sk --max-time 3 '{HEALTHZ}'")
        seen["queue"] = (depth0, done0, *_queue(env, "replicaset"))
        d = _deployment(kube, ns)
        seen["deployment"] = (d["spec"]["replicas"], d.get("status", {}).get("readyReplicas"))
        seen["in_service"] = _ready_in_service(kube, ns)

    fault = ControllerStuck()
    t0 = time.monotonic()
    result = run_fault(env, fault, f"{env.cluster}-control-plane", ControllerStuckParams(controller=controller),
                       duration=5, deadline=180, journal=Journal(tmp_path / "j.jsonl"),
                       on_effect=while_stuck)  # fmt: skip
    print(f"\ncontroller-stuck {controller}: effect {result.effect_s}s after the apply lines, "
          f"{seen.get('inject_to_effect')}s after the first; held {result.held_s:.0f}s, "
          f"recovered {result.recovery_s}s after revert; named by the diagnosis after {seen.get('named_after')}s "
          f"(one diagnosis {seen.get('diagnosis_s', 0):.1f}s); top {seen.get('top')}; lease {seen.get('lease')}; "
          f"queue replicaset (depth, done) before/after {seen.get('queue')}; web {seen.get('deployment')}, "
          f"{seen.get('in_service')} in the Service")  # fmt: skip
    assert result.effect_s is not None and result.recovery_s is not None, (result.errors, result.failures)
    # the process looked healthy all along: same leader, lease renewed, /healthz ok
    holder0, renewed0, holder1, renewed1 = seen["lease"]
    assert holder1 == holder0 and renewed1 > renewed0 + 5, seen["lease"]
    assert seen["healthz"].strip().endswith("healthz check passed"), seen["healthz"]
    check = {"replicaset": "replicaset-controller", "horizontalpodautoscaling": "horizontal-pod-autoscaler-controller",
             "endpointslice": "endpointslice-controller"}[controller]  # fmt: skip
    # with no worker it still reports ok; left out, it is not listed at all
    assert (f"[+]{check} ok" in seen["healthz"]) == (controller == "replicaset"), seen["healthz"]
    # the diagnosis named the controller, and nothing blamed the process
    assert seen["named_after"] is not None, seen["top"]
    assert not seen["process_blamed"], seen["process_blamed"]
    # the workload did not converge where that controller owns the step
    if controller == "replicaset":
        depth0, done0, depth1, done1 = seen["queue"]
        assert depth1 is not None and depth1 >= 1 and done1 == done0, seen["queue"]
        assert seen["deployment"] == (2, 1)
    elif controller == "horizontalpodautoscaling":
        assert seen["deployment"] == (1, 1)
    else:
        assert seen["deployment"] == (2, 2) and seen["in_service"] == 1, (seen["deployment"], seen["in_service"])
    # after the revert it does
    kube.wait("the workload to converge", lambda: workloads.ready_replicas(kube, ns) == 2 and
              _ready_in_service(kube, ns) == 2, 180, interval=2)  # fmt: skip


def test_a_quota_refuses_a_scale_out_while_every_component_is_healthy(
    env: Env, kube: Kube, ns: str, tmp_path: Path
) -> None:
    _web(kube, ns)
    kube.apply(workloads.hpa(ns, min_replicas=1, max_replicas=3))
    measurement = HpaScaleUp(env, TargetParams(), "scale-up", ns)
    measurement.start()
    quota = f"/api/v1/namespaces/{ns}/resourcequotas/chaoskit-quota"
    stop = threading.Event()

    def ask_for_three() -> None:
        """The HPA told to scale at once, as soon as the quota is enforced."""
        while not stop.wait(0.5):
            found = kube.find(quota)
            if found and (found.get("status") or {}).get("hard"):
                kube.patch(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/web",
                           {"spec": {"minReplicas": 3}})  # fmt: skip
                return

    asker = threading.Thread(target=ask_for_three, daemon=True)
    asker.start()
    seen: dict[str, Any] = {}

    def while_capped() -> None:
        pattern = rf"ResourceQuota chaoskit-quota in namespace {ns} refuses pods \(pods used 1/hard 1\)"
        seen["named_after"], found = _diagnose_until(env, pattern)
        seen["diagnosis_s"] = found.duration_s
        seen["top"] = [f"{f.severity} {f.component}: {f.title}" for f in found.top_findings()[:3]]
        seen["others"] = {f"{r.component}@{r.subject}": r.status for r in found.reports
                          if r.component in COMPONENTS}  # fmt: skip
        seen["cm_findings"] = [f"{f.severity}: {f.title}" for r in found.reports if r.component == "controller-manager"
                               for f in r.findings if f.severity != "info"]  # fmt: skip
        events = kube.get(f"/api/v1/namespaces/{ns}/events", fieldSelector="reason=FailedCreate")["items"]
        seen["events"] = [e["message"] for e in events]
        d = _deployment(kube, ns)
        seen["deployment"] = (d["spec"]["replicas"], d.get("status", {}).get("replicas"))

    params = QuotaParams(namespace=ns, pods=1, probe_replicas=0)
    try:
        result = run_fault(env, QuotaExhausted(), f"{env.cluster}-control-plane", params, duration=45,
                           journal=Journal(tmp_path / "j.jsonl"), on_effect=while_capped)  # fmt: skip
        kube.wait("the scale-out to finish after the revert", lambda: workloads.ready_replicas(kube, ns) == 3, 240,
                  interval=2)  # fmt: skip
    finally:
        stop.set()
        res = measurement.stop()
    stages = sorted({(s.stage, round(s.end - s.start, 1)) for s in res.samples if s.stage == "pod_created"})
    print(f"\nquota-exhausted: effect {result.effect_s}s, recovered {result.recovery_s}s after revert; named by the "
          f"diagnosis after {seen.get('named_after')}s (one diagnosis {seen.get('diagnosis_s', 0):.1f}s); top "
          f"{seen.get('top')}; refusals {seen.get('events', [])[:1]}; web {seen.get('deployment')}; pod_created "
          f"stages {stages}; notes {res.notes}")  # fmt: skip
    assert result.effect_s is not None and result.recovery_s is not None, (result.errors, result.failures)
    assert any("exceeded quota: chaoskit-quota" in m for m in seen["events"]), seen["events"]
    assert seen["named_after"] is not None, seen["top"]
    assert all(status == "ok" for status in seen["others"].values()), seen["others"]
    assert seen["cm_findings"] and all(f.startswith("warning: ResourceQuota") for f in seen["cm_findings"]), seen
    assert seen["deployment"] == (3, 1)  # the HPA asked for 3; the ReplicaSet has only the pod the quota allows
    # the measurement saw the scale-up wait at pod creation for as long as the quota held
    assert res.samples and max(s.end - s.start for s in res.samples if s.stage == "pod_created") >= 15, res.notes
