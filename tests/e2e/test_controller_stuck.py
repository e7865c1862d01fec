"""One controller stuck inside the real kube-controller-manager, and a ResourceQuota refusing a scale-out's pods.

controller-manager.controller-stuck: while the chosen controller does no work, kube-controller-manager keeps
renewing its leader lease and answers /healthz ok, a real workload does not converge where that controller owns the
step (no pod for a raised ReplicaSet, no scale for an HPA, no Service entry for a Ready pod), and the diagnosis names
that controller, never the process. After the revert the workload converges.
controller-manager.quota-exhausted: the ReplicaSet's creations are refused with FailedCreate "exceeded quota", every
component, the controller manager too, stays healthy (but where another playbook's fault held meanwhile), the
diagnosis names the quota, its namespace and used/hard, and the HPA-to-Ready measurement shows the scale-up waiting
at pod creation.

The HPA and ReplicaSet controllers and the quota are watched in the session's catalog run (tests/e2e/catalog.py);
the EndpointSlice controller, which no playbook runs, is injected here.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from chaoskit import workloads
from chaoskit.checks.cluster import ClusterHealthy
from chaoskit.components import controller_manager
from chaoskit.components.controller_manager.controllers import CONTROLLERS
from chaoskit.diagnosers.etcd import EtcdParams
from chaoskit.diagnosers.kit.base import UNCOLLECTED, ComponentReport, Diagnosis, Finding
from chaoskit.diagnosers.run import components as registered
from chaoskit.diagnosers.run import diagnose
from chaoskit.engine import run_fault
from chaoskit.env import Env
from chaoskit.faults.base import Radius
from chaoskit.faults.controller_manager.stuck import LEASE, STUCK, ControllerStuck, ControllerStuckParams, StuckName
from chaoskit.journal import Journal
from chaoskit.model.params import NoParams
from chaoskit.model.timeline import MeasurementResult, api_time
from chaoskit.registry import FAULTS, load_catalog
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import named
from chaoskit.seams.scrape import Metrics, scrape_command
from chaoskit.step import resolve
from tests.e2e.catalog import Catalog, Holding, observe
from tests.e2e.conftest import HOST_DISK
from tests.e2e.radius import touches

load_catalog()
NAMED_WITHIN = 60.0
HEALTHZ = "https://127.0.0.1:10257/healthz?verbose"
METRICS = controller_manager.METRICS_URL
# the controller's name in the finding that must come first, per controller
NAMED = {
    "replicaset": r"ReplicaSet controller \(replicaset-controller\) does no work",
    "horizontalpodautoscaling": r"HPA controller \(horizontal-pod-autoscaler-controller\) was not started",
    "endpointslice": r"EndpointSlice controller \(endpointslice-controller\) was not started",
}
# every diagnosed component, the controller manager's too (the quota's finding is the workloads'; chaoskit's own
# switches aside)
COMPONENTS = [c for c in registered() if c not in ("workloads", "reverts")]
# while its etcd requests are that slow, the API server times some requests out (5xx): the host again, not the fault
# etcd's own findings of the host: its disk (from its WAL fsync latency), or a CPU every process waits for (PSI)
HOST_SLOW = re.compile(r"etcd's disk is slow|etcd requests are slow: .*on a busy host CPU")
TIMED_OUT = re.compile(r"of API requests failed with 5xx")
PROCESS_BLAMED = re.compile(r"kube-controller-manager is (stopped|not running)|No kube-controller-manager is leading")


@pytest.fixture
def env(kube: Kube, cluster: str) -> Env:
    env = Env.for_kind(kube, cluster)
    kube.wait("the cluster to be healthy", lambda: ClusterHealthy().run(env, NoParams()).ok, 240, interval=2)
    return env


def _sh(env: Env, script: str) -> str:
    return env.nodes.run(named(f"{env.cluster}-control-plane"), ["sh", "-c", script], check=False, timeout=30).stdout


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
    slices = kube.get(
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", labelSelector="kubernetes.io/service-name=web"
    )["items"]
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
    # and in its Service before a fault restarts the controller manager (else the EndpointSlice lags from the start)
    kube.wait("web in its Service", lambda: _ready_in_service(kube, ns) >= replicas, 60)


HEALTHZ_CHECK = {c.alias: c.name for c in CONTROLLERS}  # its --controllers name -> its /healthz check


def _looks_healthy(controller: str, lease: tuple[str, float, str, float], healthz: str) -> None:
    """The process looked healthy all along: same leader, lease renewed, /healthz ok."""
    holder0, renewed0, holder1, renewed1 = lease
    assert holder1 == holder0 and renewed1 > renewed0 + 5, lease
    assert healthz.strip().endswith("healthz check passed"), healthz
    # with no worker it still reports ok; left out, it is not listed at all
    assert (f"[+]{HEALTHZ_CHECK[controller]} ok" in healthz) == (controller == "replicaset"), healthz


def _queue_stalled(queue: tuple[float | None, ...]) -> None:
    depth0, done0, depth1, done1 = queue
    assert depth1 is not None and depth1 >= 1 and done1 == done0, queue


def _healthz(env: Env) -> str:
    """kube-controller-manager's /healthz?verbose, or curl's error after three tries a second apart."""
    for _ in range(3):
        out = _sh(env, f"curl -sSk --max-time 3 '{HEALTHZ}' 2>&1")
        if out.strip().endswith("healthz check passed"):
            break
        time.sleep(1)
    return out


@observe("controller-manager.controller-stuck")
def _while_stuck(h: Holding) -> dict[str, Any]:
    """In the catalog run: the lease, /healthz and the ReplicaSet work queue while the controller is stuck.

    Sampled every 2 s for up to 20 s; only samples finished before chaoskit said "reverting" are kept.
    """
    holder, renewed = _lease(h.env)
    depth0, done0 = _queue(h.env, "replicaset")
    t0, seen = time.monotonic(), {}
    while not h.reverted.wait(2) and time.monotonic() - t0 < 20:
        sample = {
            "lease": (holder, renewed, *_lease(h.env)),
            "healthz": _healthz(h.env),
            "queue": (depth0, done0, *_queue(h.env, "replicaset")),
        }
        if h.reverted.is_set():
            break  # taken while the revert restarted the process
        seen = {**sample, "observed_for_s": round(time.monotonic() - t0, 1)}
    return seen


@touches()
def test_in_the_catalog_each_stuck_controller_left_its_process_leading_healthy_and_unblamed(catalog: Catalog) -> None:
    steps = catalog.steps("controller-manager.controller-stuck")
    assert len(steps) >= 5, "the catalog stops the HPA, ReplicaSet, ServiceAccount, Namespace and lifecycle controllers"
    for run, step in steps:
        controller = next(c for c in STUCK if f"without the {c} controller" in step["summary"])
        seen = catalog.seen.get((run["playbook"], step["step"]), {})
        print(f"\n{step['step']} ({controller}): {seen}")
        held = f"effect after {step.get('effect_s')}s, held {step.get('held_s')}s"
        assert seen.get("observed_for_s", 0) >= 6, f"not observed long enough while it held ({held}): {seen}"
        _looks_healthy(controller, seen["lease"], seen["healthz"])
        if controller == "replicaset":  # its queue fills and nothing is worked off
            _queue_stalled(seen["queue"])
        during = [d for d in run["diagnoses"] if d["when"] == "during" and d.get("step") == step["step"]]
        blamed = [
            f.title
            for d in during
            for r in Diagnosis.from_dict(d["report"]).reports
            for f in r.findings
            if PROCESS_BLAMED.search(f.title)
        ]
        assert during and not blamed, blamed


# The catalog runs the HPA and ReplicaSet controllers; the EndpointSlice controller is proven here, with a workload
# whose second Ready pod never enters the Service.
@pytest.mark.parametrize("controller", ["endpointslice"])
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
        # 10 s after the first lease read: the lease (renewed every 2 s) must be seen renewed more than 5 s later
        time.sleep(max(0.0, 10 - (seen["named_after"] or NAMED_WITHIN)))
        seen["lease"] = (holder, renewed, *_lease(env))
        seen["healthz"] = _healthz(env)
        seen["queue"] = (depth0, done0, *_queue(env, "replicaset"))
        d = _deployment(kube, ns)
        seen["deployment"] = (d["spec"]["replicas"], d.get("status", {}).get("readyReplicas"))
        seen["in_service"] = _ready_in_service(kube, ns)

    fault = ControllerStuck()
    t0 = time.monotonic()
    step = resolve(
        fault,
        ControllerStuckParams(controller=controller),
        env.nodes.list_nodes(),
        target=f"{env.cluster}-control-plane",
        duration=5,
        deadline=180,
    )
    result = run_fault(env, step, journal=Journal(tmp_path / "j.jsonl"), on_effect=while_stuck)
    print(
        f"\ncontroller-stuck {controller}: effect {result.effect_s}s after the apply lines, "
        f"{seen.get('inject_to_effect')}s after the first; held {result.held_s:.0f}s, "
        f"recovered {result.recovery_s}s after revert; named by the diagnosis after {seen.get('named_after')}s "
        f"(one diagnosis {seen.get('diagnosis_s', 0):.1f}s); top {seen.get('top')}; lease {seen.get('lease')}; "
        f"queue replicaset (depth, done) before/after {seen.get('queue')}; web {seen.get('deployment')}, "
        f"{seen.get('in_service')} in the Service"
    )
    assert result.effect_s is not None and result.recovery_s is not None, (result.errors, result.failures)
    _looks_healthy(controller, seen["lease"], seen["healthz"])
    # the diagnosis named the controller, and nothing blamed the process
    assert seen["named_after"] is not None, seen["top"]
    assert not seen["process_blamed"], seen["process_blamed"]
    # the workload did not converge where that controller owns the step
    if controller == "replicaset":
        _queue_stalled(seen["queue"])
        assert seen["deployment"] == (2, 1)
    elif controller == "horizontalpodautoscaling":
        assert seen["deployment"] == (1, 1)
    else:
        assert seen["deployment"] == (2, 2) and seen["in_service"] == 1, (seen["deployment"], seen["in_service"])
    # after the revert it does
    kube.wait(
        "the workload to converge",
        lambda: workloads.ready_replicas(kube, ns) == 2 and _ready_in_service(kube, ns) == 2,
        180,
        interval=2,
    )


@observe("controller-manager.quota-exhausted")
def _while_capped(h: Holding) -> dict[str, Any]:
    """In the catalog run: the workload's refused pod creations and its Deployment once the HPA raised it (the step's
    scaleUp asks for 3 at the effect, more if the load makes it want more; the quota lets 2 pods be: the web pod and
    the load generator)."""
    seen: dict[str, Any] = {}
    while not h.reverted.wait(2):
        d = _deployment(h.env.kube, h.namespace)
        events = h.env.kube.get(f"/api/v1/namespaces/{h.namespace}/events", fieldSelector="reason=FailedCreate")
        refused = [e["message"] for e in events["items"] if e["involvedObject"]["name"].startswith("web-")]
        if h.reverted.is_set():
            break
        seen = {"deployment": (d["spec"]["replicas"], d.get("status", {}).get("replicas")), "refused": refused}
        if seen["deployment"][0] >= 3 and refused:
            break
    return seen


@touches()
def test_in_the_catalog_a_quota_refuses_the_scale_out_while_every_other_component_is_healthy(
    catalog: Catalog,
) -> None:
    ((run, step),) = catalog.steps("controller-manager.quota-exhausted")
    seen = catalog.seen.get((run["playbook"], step["step"]), {})
    print(f"\nquota-exhausted: {seen}")
    # the HPA asked for 3 (4 when the load's requests alone made the pod busy on a loaded host); the quota let the
    # ReplicaSet keep 1
    wanted, kept = seen.get("deployment", (0, 0))
    assert wanted >= 3 and kept == 1, seen
    assert any("exceeded quota: chaoskit-quota" in m for m in seen["refused"]), seen["refused"]
    (during,) = [d for d in run["diagnoses"] if d["when"] == "during" and d.get("step") == step["step"]]
    found = Diagnosis.from_dict(during["report"])
    ns = run["namespace"]
    # the quota's finding is the workloads' (a namespace's limit), and nothing else of this namespace stands there
    # (another playbook of the suite may show its own workload's symptoms meanwhile: they are that run's)
    cm = [
        f"{f.severity}: {f.title}"
        for r in found.reports
        if r.component == "workloads"
        for f in r.findings
        if f.severity != "info" and any(f"/{ns}/" in e for e in (f.entity, *f.affects))
    ]
    assert any(
        re.search(rf"ResourceQuota chaoskit-quota in namespace {ns} refuses pods \(pods used \d+/hard 2\)", f)
        for f in cm
    ), cm
    assert all(f.startswith("warning: ResourceQuota") for f in cm), cm
    # every other component is ok, but where the run's own record explains what it is not: a fault another playbook
    # held meanwhile; this host, where the same diagnosis found etcd's fsyncs slow (its evidence: the WAL fsync
    # latency) or the host's CPU saturated (its evidence: the kernel's CPU pressure), which then explains the API
    # server's slow etcd requests, its slow API requests and the 5xx of requests that timed out on them (no quota
    # slows a disk or takes a CPU); or evidence not collected within the diagnosis's budget, where the component's
    # other checks in the same report were collected and found nothing (the finding is about chaoskit's reading, and
    # the component was seen)
    besides = [(FAULTS.get(h.split("@")[0])(), h.split("@")[1]) for h in during["held_besides"]]
    causes = [x for r in found.reports if r.component == "etcd" for x in r.findings if HOST_SLOW.search(x.title)]
    # etcd's own disk latency as the same diagnosis recorded it, over the limits its diagnoser judges by: a slow spell
    # too short for a finding of its own (fewer than min_slow slow commits), yet etcd batches many writes into one
    # commit, so one slow commit holds up several API requests, enough for theirs (CI: backend commit p99 0.97 s
    # against 0.25 s, with mutating requests at p99 1.92 s)
    limits = EtcdParams()
    slow_disk = [
        f"etcd {name} p99 {v:.2f}s > {limit:g}s"
        for r in found.reports
        if r.component == "etcd"
        for c in r.checks
        if c.check == "disk-latency"
        for name, limit in (("wal_fsync", limits.fsync_p99), ("backend_commit", limits.commit_p99))
        if (v := c.metrics.get(f"{name}_p99_s")) is not None and v > limit
    ]
    host = re.compile(f"{HOST_DISK.pattern}|{TIMED_OUT.pattern}") if causes or slow_disk else None

    def explained(r: ComponentReport, x: Finding) -> bool:
        if x.severity == "info":
            return True
        if x.title == UNCOLLECTED:
            return any(c.available for c in r.checks)  # partly seen: the rest found nothing
        return x.severity == "warning" and host is not None and bool(host.search(x.title))

    def theirs(r: ComponentReport, x: Finding) -> bool:
        """What a fault another playbook held meanwhile explains is that fault's: its node's reports or its
        component's; a report whose component its radius meets (`Radius.meets`, the rule the suite overlaps by: a
        kubelet's NotReady node churns endpoints every kube-proxy reprograms); a finding the diagnosis itself laid on
        an entity of its node or component (`caused_by`)."""
        for f, n in besides:
            if (r.subject == n if f.scope == "node" else r.component == f.named.component) or (
                f.radius(named(n), f.Params()).meets(Radius("node", r.subject, r.component))
            ):
                return True
            if x.caused_by and (x.caused_by.endswith(f"/{n}") or x.caused_by.split("/")[0] == f.named.component):
                return True
        return False

    unexplained = {
        f"{r.component}@{r.subject}": [f"{x.severity}: {x.title}" for x in r.findings]
        for r in found.reports
        if r.component in COMPONENTS
        and r.status != "ok"
        and not all(explained(r, x) or theirs(r, x) for x in r.findings)
    }
    unseen = [f"{r.component}@{r.subject}" for r in found.reports for x in r.findings if x.title == UNCOLLECTED]
    print(
        f"\nquota-exhausted, explained by the record: the host {[x.title for x in causes] + slow_disk or 'not slow'}; "
        f"uncollected {unseen}"
    )
    assert not unexplained, (unexplained, during["held_besides"])
    # the measurement saw the scale-up wait at pod creation for as long as the quota held
    (res,) = [MeasurementResult.from_dict(m) for m in run["measurements"]]
    assert max((s.seconds for s in res.samples if s.stage == "pod_created"), default=0) >= 15, res.notes
