"""The controller manager's analysis: recorded health, lease, work queues and Deployments, edited into what a hung
or stopped controller manager and objects that never converge look like."""

from __future__ import annotations

import copy
import re
from typing import Any

from diagnose_evidence import DOWN, TIMED_OUT, controller_manager, edit_metric, http, iso_at, obj, process, text, titles

from chaoskit.components.workloads import deployment_symptoms
from chaoskit.diagnosers.controller_manager import ControllerManagerDiagnoser, ControllerManagerEvidence
from chaoskit.diagnosers.kit.base import status_of
from chaoskit.diagnosers.kit.common import HttpAnswer
from chaoskit.diagnosers.kit.quotas import quantity
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.seams.scrape import Metrics


def analyze(ev: ControllerManagerEvidence) -> list[str]:
    return titles(ControllerManagerDiagnoser().analyze(ev))


def web(ev: ControllerManagerEvidence) -> dict[str, Any]:
    return copy.deepcopy(
        next(d for d in obj("controller-manager/deployments.json")["items"] if d["metadata"]["name"] == "web")
    )


def with_deployments(ev: ControllerManagerEvidence, *deployments: dict[str, Any]) -> ControllerManagerEvidence:
    return controller_manager(deployments=Fetched({"items": list(deployments)}), collected_at=ev.collected_at)


def test_healthy_controller_manager_has_no_findings() -> None:
    report = ControllerManagerDiagnoser().report(controller_manager(), "chaoskit-control-plane")
    assert report.status == "ok" and report.findings == ()
    assert [c.check for c in report.checks] == [
        "process",
        "healthz",
        "leader-lease",
        "controllers",
        "workqueues",
        "permissions",
        "deployments",
        "hpas",
    ]


def test_hung_controller_manager_is_failed_by_its_state_and_its_stale_lease() -> None:
    ev = controller_manager()
    ev = controller_manager(
        process=process("kube-controller-manager", "Tsl"), healthz=TIMED_OUT, collected_at=ev.collected_at + 45
    )
    findings = ControllerManagerDiagnoser().analyze(ev)
    assert status_of(findings) == "failed"
    assert [t.split(":")[0] + ":" + t.split(":")[1].split("(")[0] for t in titles(findings)] == [
        "critical: kube-controller-manager is stopped ",
        "critical: kube-controller-manager /healthz does not answer on ",
        "critical: No kube-controller-manager is leading",
    ]


def test_a_failing_controller_in_healthz_is_named() -> None:
    body = text("controller-manager/healthz.txt").replace(
        "[+]replicaset-controller ok", "[-]replicaset-controller failed: reason withheld"
    )
    assert analyze(controller_manager(healthz=http(body, 500))) == [
        "critical: kube-controller-manager /healthz fails: replicaset-controller"
    ]


def test_a_deployment_whose_new_generation_is_never_observed_does_not_converge() -> None:
    ev = controller_manager()
    d = web(ev)
    d["metadata"]["generation"] = 3
    d["metadata"]["managedFields"] = [
        {"manager": "kubectl", "operation": "Update", "time": iso_at(ev.collected_at - 300)}
    ]
    stale = controller_manager(collected_at=ev.collected_at + 45)
    findings = ControllerManagerDiagnoser().analyze(with_deployments(stale, d))
    assert (
        "warning: 1 Deployment(s) do not converge (probe-test/web: generation 3 not observed (observed 1))"
        in titles(findings)
    )
    converge = next(f for f in findings if "Deployment" in f.title)
    assert "lease is stale" in converge.probable_cause


def test_progress_deadline_exceeded_with_the_controller_at_work_is_the_workloads_symptom_not_its_finding() -> None:
    ev = controller_manager()
    d = web(ev)
    d["status"]["conditions"][1].update(
        status="False",
        reason="ProgressDeadlineExceeded",
        message='ReplicaSet "web-6cfd75477" has timed out progressing.',
    )
    assert analyze(with_deployments(ev, d)) == []
    (seen,) = deployment_symptoms([d], ev.collected_at, unavailable_after=30)
    assert seen.entity == "deployment/probe-test/web" and "stopped progressing" in seen.text


def test_replicas_missing_for_minutes_do_not_converge() -> None:
    ev = controller_manager()
    d = web(ev)
    d["spec"]["replicas"] = 5
    later = controller_manager(collected_at=ev.collected_at + 600)
    (title,) = [t for t in analyze(with_deployments(later, d)) if "Deployment" in t]
    assert title.startswith("warning: 1 Deployment(s) do not converge (probe-test/web: 2/5 available")


def hpa(ev: ControllerManagerEvidence, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "probe-test"},
        "spec": {"minReplicas": 1, "maxReplicas": 5},
        "status": {"currentReplicas": 2, "desiredReplicas": 2, **status},
    }


def test_an_hpa_without_metrics_is_a_warning() -> None:
    ev = controller_manager()
    condition = {
        "type": "ScalingActive",
        "status": "False",
        "reason": "FailedGetResourceMetric",
        "message": "the HPA was unable to compute the replica count: failed to get cpu utilization",
        "lastTransitionTime": iso_at(ev.collected_at - 180),
    }
    (title,) = analyze(controller_manager(hpas=Fetched({"items": [hpa(ev, conditions=[condition])]})))
    assert "ScalingActive=False FailedGetResourceMetric" in title


def test_an_hpa_whose_target_never_reaches_the_desired_count_is_a_warning() -> None:
    ev = controller_manager()
    stuck = hpa(ev, desiredReplicas=5, lastScaleTime=iso_at(ev.collected_at - 600))
    (title,) = analyze(controller_manager(hpas=Fetched({"items": [stuck]})))
    assert "desired 5 replicas, current 2, 60" in title


def test_a_backed_up_work_queue_is_a_warning() -> None:
    metrics = edit_metric(text("controller-manager/metrics.prom"), "workqueue_depth", 'name="replicaset"', 500)
    assert analyze(controller_manager(metrics=Metrics.parse(metrics))) == [
        "warning: controller work queues backed up: replicaset (500)"
    ]


def test_api_unavailable_is_said_not_failed() -> None:
    report = ControllerManagerDiagnoser().report(controller_manager(lease=DOWN, deployments=DOWN, hpas=DOWN), "cp")
    assert report.status == "ok" and {f.severity for f in report.findings} == {"info"}
    assert len(report.findings) == 3


# --- one controller stuck while the process is up, leading and healthy ----------------------------------------------

STUCK_FLAGS = "kube-controller-manager --controllers=*,bootstrapsigner,tokencleaner --concurrent-replicaset-syncs=0"


def queues(depth: float, done: float, adds: float, unfinished: float = 0, queue: str = "replicaset") -> Metrics:
    """The recorded scrape with one queue's depth, items worked on, items added and work in progress set."""
    t = text("controller-manager/metrics.prom")
    for name, value in (
        ("workqueue_depth", depth),
        ("workqueue_work_duration_seconds_count", done),
        ("workqueue_adds_total", adds),
        ("workqueue_unfinished_work_seconds", unfinished),
    ):
        t = edit_metric(t, name, f'name="{queue}"', value)
    return Metrics.parse(t)


def lagging_rs(ev: ControllerManagerEvidence, written_ago: float) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "chaoskit-stuck-probe",
            "namespace": "chaoskit-stuck-probe",
            "generation": 1,
            "creationTimestamp": iso_at(ev.collected_at - written_ago),
        },
        "spec": {"replicas": 1},
        "status": {"replicas": 0},
    }


def stuck_replicaset(**changes: Any) -> ControllerManagerEvidence:
    ev = controller_manager()
    base = dict(
        metrics=queues(1, 0, 1),
        metrics_after=queues(1, 0, 2),
        window_s=3.0,
        cmdline=STUCK_FLAGS,
        replicasets=Fetched({"items": [lagging_rs(ev, 30)]}),
    )
    return controller_manager(**{**base, **changes})


def test_a_replicaset_controller_with_no_worker_is_named_not_the_process() -> None:
    findings = ControllerManagerDiagnoser().analyze(stuck_replicaset())
    assert titles(findings) == [
        "critical: ReplicaSet controller (replicaset-controller) does no work: its queue holds 1 item(s) and none "
        "was taken in 3s (1 more added); 1 object(s) behind their spec (chaoskit-stuck-probe/chaoskit-stuck-probe: "
        "generation 1 not observed (observed none), 0/1 pods)"
    ]
    (f,) = findings
    assert "--concurrent-replicaset-syncs=0" in f.probable_cause and "leading" in f.probable_cause
    assert not re.search(r"\b(down|hung|frozen|stopped)\b", f"{f.title} {f.probable_cause}")


def test_a_queue_that_was_worked_on_or_is_being_worked_on_is_not_stuck() -> None:
    assert analyze(stuck_replicaset(metrics_after=queues(1, 1, 2), replicasets=Fetched({"items": []}))) == []
    busy = stuck_replicaset(metrics_after=queues(1, 0, 2, unfinished=4.2), replicasets=Fetched({"items": []}))
    assert analyze(busy) == []
    drained = stuck_replicaset(metrics_after=queues(0, 0, 2), replicasets=Fetched({"items": []}))
    assert analyze(drained) == []
    one_scrape = controller_manager(metrics=queues(1, 0, 1), replicasets=Fetched({"items": []}))
    assert analyze(one_scrape) == []


def test_a_new_leader_s_queue_alone_is_not_stuck_while_its_caches_sync() -> None:
    ev = stuck_replicaset()
    lease = copy.deepcopy(obj("controller-manager/lease.json"))
    lease["spec"]["acquireTime"] = iso_at(ev.collected_at - 5)
    assert analyze(stuck_replicaset(lease=Fetched(lease), replicasets=Fetched({"items": []}))) == []
    (title,) = analyze(stuck_replicaset(lease=Fetched(lease)))  # with a ReplicaSet behind its spec it is
    assert "does no work" in title


def test_without_the_zero_flag_the_cause_stays_open() -> None:
    (f,) = ControllerManagerDiagnoser().analyze(stuck_replicaset(cmdline=""))
    assert "not running or are blocked" in f.probable_cause


def test_a_frozen_or_unled_process_is_not_blamed_on_one_controller() -> None:
    ev = stuck_replicaset()
    frozen = stuck_replicaset(
        process=process("kube-controller-manager", "Tsl"), healthz=TIMED_OUT, collected_at=ev.collected_at + 45
    )
    assert not any("does no work" in t for t in analyze(frozen))


HPA_OFF = "--controllers=*,bootstrapsigner,tokencleaner,-horizontalpodautoscaling"


def without(check: str) -> HttpAnswer:
    return http(text("controller-manager/healthz.txt").replace(f"[+]{check} ok\n", ""))


def never_synced_hpa(ev: ControllerManagerEvidence, created_ago: float) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "chaoskit-stuck-probe",
            "namespace": "chaoskit-stuck-probe",
            "generation": 1,
            "creationTimestamp": iso_at(ev.collected_at - created_ago),
        },
        "spec": {"minReplicas": 1, "maxReplicas": 1},
        "status": {},
    }


def test_a_controller_left_out_of_controllers_is_named_with_what_it_leaves_behind() -> None:
    ev = controller_manager()
    off = controller_manager(
        healthz=without("horizontal-pod-autoscaler-controller"),
        cmdline=f"kube-controller-manager {HPA_OFF}",
        hpas=Fetched({"items": [never_synced_hpa(ev, 60)]}),
    )
    findings = ControllerManagerDiagnoser().analyze(off)
    assert titles(findings)[0] == (
        "critical: HPA controller (horizontal-pod-autoscaler-controller) was not started: absent from "
        "kube-controller-manager's /healthz; 1 object(s) behind their spec (chaoskit-stuck-probe/chaoskit-stuck-probe: "
        "never synced (no status))"
    )
    assert HPA_OFF in findings[0].probable_cause and "leading" in findings[0].probable_cause
    young = controller_manager(
        healthz=without("horizontal-pod-autoscaler-controller"), hpas=Fetched({"items": [never_synced_hpa(ev, 20)]})
    )
    assert analyze(young) == [
        "warning: HPA controller (horizontal-pod-autoscaler-controller) was not started: absent from "
        "kube-controller-manager's /healthz"
    ]


def test_an_endpointslice_controller_left_out_leaves_services_without_slices() -> None:
    ev = controller_manager()
    svc = {
        "metadata": {"name": "web", "namespace": "demo", "creationTimestamp": iso_at(ev.collected_at - 40)},
        "spec": {"selector": {"app": "web"}},
    }
    headless_external = {"metadata": {"name": "x", "namespace": "demo"}, "spec": {"type": "ExternalName"}}
    off = controller_manager(
        healthz=without("endpointslice-controller"), services=Fetched({"items": [svc, headless_external]})
    )
    (title,) = analyze(off)
    assert title.startswith("critical: EndpointSlice controller (endpointslice-controller) was not started")
    assert title.endswith("(demo/web: no EndpointSlice)")
    served = {"metadata": {"namespace": "demo", "labels": {"kubernetes.io/service-name": "web"}}}
    on = controller_manager(services=Fetched({"items": [svc]}), slices=Fetched({"items": [served]}))
    assert analyze(on) == []


def test_a_controller_manager_not_leading_yet_lists_no_controllers_and_none_is_missing() -> None:
    assert analyze(controller_manager(healthz=http("[+]leaderElection ok\nhealthz check passed"))) == []


def test_quantities_compare_as_numbers() -> None:
    assert [quantity(q) for q in ("3", "500m", "1Gi", "2k", "x", "1.5")] == [3, 0.5, 2**30, 2000, None, 1.5]


# --- recorded on the cluster while each fault held (see controller-manager/README.md) ------------------------------


def recorded(scenario: str) -> ControllerManagerEvidence:
    d = f"controller-manager/{scenario}"
    return controller_manager(
        collected_at=float(text(f"{d}/collected-at.txt")),
        healthz=http(text(f"{d}/healthz.txt")),
        metrics=Metrics.parse(text(f"{d}/metrics-1.prom")),
        metrics_after=Metrics.parse(text(f"{d}/metrics-2.prom")),
        window_s=3.0,
        cmdline=text(f"{d}/cmdline.txt"),
        **{
            name: Fetched(obj(f"{d}/{file}.json"))
            for name, file in (
                ("lease", "lease"),
                ("hpas", "hpas"),
                ("replicasets", "replicasets"),
                ("services", "services"),
                ("slices", "endpointslices"),
            )
        },
    )


def test_recorded_replicaset_controller_with_no_worker() -> None:
    findings = ControllerManagerDiagnoser().analyze(recorded("replicaset"))
    assert titles(findings) == [
        "critical: ReplicaSet controller (replicaset-controller) does no work: its queue holds 4 item(s) and none "
        "was taken in 3s; 1 object(s) behind their spec (chaoskit-stuck-probe/chaoskit-stuck-probe: generation 1 "
        "not observed (observed none), 0/1 pods)"
    ]
    assert "--concurrent-replicaset-syncs=0" in findings[0].probable_cause


def test_recorded_hpa_controller_left_out() -> None:
    findings = ControllerManagerDiagnoser().analyze(recorded("horizontalpodautoscaling"))
    assert titles(findings) == [
        "critical: HPA controller (horizontal-pod-autoscaler-controller) was not started: absent from "
        "kube-controller-manager's /healthz; 1 object(s) behind their spec (chaoskit-stuck-probe/chaoskit-stuck-probe: "
        "never synced (no status))"
    ]
    assert "--controllers=*,bootstrapsigner,tokencleaner,-horizontalpodautoscaling leaves it out" in (
        findings[0].probable_cause
    )


def test_recorded_endpointslice_controller_left_out() -> None:
    (title,) = analyze(recorded("endpointslice"))
    assert title == (
        "critical: EndpointSlice controller (endpointslice-controller) was not started: absent from "
        "kube-controller-manager's /healthz; 1 object(s) behind their spec (chaoskit-stuck-probe/chaoskit-stuck-probe: "
        "no EndpointSlice)"
    )


def test_a_deployment_that_just_lost_its_pods_or_is_being_deleted_is_not_stalled() -> None:
    ev = controller_manager()
    d = web(ev)
    d["spec"]["replicas"] = 2
    d["status"].update(updatedReplicas=1, availableReplicas=1)
    for c in d["status"]["conditions"]:
        c["lastUpdateTime"] = c["lastTransitionTime"] = iso_at(ev.collected_at - 600)  # progressed long ago
    ev_stale = controller_manager(collected_at=ev.collected_at + 45)  # its lease stale: the controller's own
    stalled = analyze(with_deployments(ev_stale, d))
    assert any("1/2 available, 1 updated, no progress for 64" in t for t in stalled)
    assert analyze(with_deployments(ev, d)) == []  # at work: pods short are whatever stops them, not its finding
    available = next(c for c in d["status"]["conditions"] if c["type"] == "Available")
    available.update(status="False", lastTransitionTime=iso_at(ev.collected_at - 5))  # a pod went 5 s ago
    assert analyze(with_deployments(ev, d)) == []
    available["lastTransitionTime"] = iso_at(ev.collected_at - 600)
    d["metadata"]["deletionTimestamp"] = iso_at(ev.collected_at - 5)
    assert analyze(with_deployments(ev, d)) == []


def test_what_the_serviceaccount_and_namespace_controllers_leave_behind() -> None:
    from chaoskit.diagnosers.kit.controllers import namespaces_stuck_terminating, namespaces_without_default_account

    now = 1_000_000.0
    old, new = "1970-01-12T13:45:00Z", "1970-01-12T13:46:35Z"  # 100 s and 5 s before now
    namespaces = [
        {"metadata": {"name": "shop", "creationTimestamp": old}, "status": {"phase": "Active"}},
        {"metadata": {"name": "fresh", "creationTimestamp": new}, "status": {"phase": "Active"}},
        {"metadata": {"name": "served", "creationTimestamp": old}, "status": {"phase": "Active"}},
        {
            "metadata": {"name": "gone", "creationTimestamp": old, "deletionTimestamp": old},
            "status": {"phase": "Terminating"},
        },
    ]
    accounts = [{"metadata": {"name": "default", "namespace": "served"}}]
    assert namespaces_without_default_account(namespaces, accounts, now, 10) == [
        "shop: no default ServiceAccount (its pods are refused)"
    ]
    assert namespaces_stuck_terminating(namespaces, now, 10) == ["gone: Terminating for 100s"]


def test_a_node_without_heartbeats_still_ready_and_untainted_is_what_a_missing_lifecycle_controller_leaves() -> None:
    from chaoskit.diagnosers.kit.controllers import nodes_not_marked_lost

    now = 1_000_000.0
    old, new = "1970-01-12T13:45:00Z", "1970-01-12T13:46:35Z"  # 100 s and 5 s before now

    def node(name: str, ready: str, *, taint: bool = False) -> dict[str, Any]:
        taints = [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}] if taint else []
        conditions = [{"type": "Ready", "status": ready}]
        return {
            "metadata": {"name": name, "creationTimestamp": old},
            "spec": {"taints": taints},
            "status": {"conditions": conditions},
        }

    nodes = [
        node("alive", "True"),
        node("probe", "True"),
        node("marked", "Unknown", taint=True),
        node("silent", "True"),
    ]
    leases = [
        {"metadata": {"name": "alive"}, "spec": {"renewTime": new}},
        {"metadata": {"name": "silent"}, "spec": {"renewTime": old}},
    ]
    assert nodes_not_marked_lost(nodes, leases, now, 40) == [
        "node probe: no heartbeat for 100s, still Ready and untainted",  # no lease at all: since it was made
        "node silent: no heartbeat for 100s, still Ready and untainted",
    ]
