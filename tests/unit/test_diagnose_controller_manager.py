"""The controller manager's analysis: recorded health, lease, work queues and Deployments, edited into what a hung
or stopped controller manager and objects that never converge look like."""

from __future__ import annotations

import copy
from typing import Any

from diagnose_evidence import DOWN, TIMED_OUT, controller_manager, edit_metric, http, iso_at, obj, process, text, titles

from chaoskit.diagnosers.base import status_of
from chaoskit.diagnosers.controller_manager import ControllerManagerDiagnoser, ControllerManagerEvidence
from chaoskit.diagnosers.metrics import Metrics
from chaoskit.diagnosers.sources import Fetched


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
        "workqueues",
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


def test_progress_deadline_exceeded_is_a_warning() -> None:
    ev = controller_manager()
    d = web(ev)
    d["status"]["conditions"][1].update(
        status="False",
        reason="ProgressDeadlineExceeded",
        message='ReplicaSet "web-6cfd75477" has timed out progressing.',
    )
    (title,) = analyze(with_deployments(ev, d))
    assert "ProgressDeadlineExceeded" in title and title.startswith("warning:")


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
