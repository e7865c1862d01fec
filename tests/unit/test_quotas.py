"""A ResourceQuota used up that refuses pods: the quota is the cause (the namespace's limit), judged by the workloads
diagnoser, and the controller manager that records the refusals stays ok."""

from __future__ import annotations

from typing import Any

from diagnose_evidence import controller_manager, iso_at, obj, text, titles

from chaoskit.diagnosers.controller_manager import ControllerManagerDiagnoser
from chaoskit.diagnosers.kit.base import status_of
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.diagnosers.workloads import WorkloadsDiagnoser, WorkloadsEvidence

NOW = 1_800_000_000.0
NONE = Fetched({"items": []})


def quota(used: str, hard: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "chaoskit-quota", "namespace": "demo"},
        "status": {"hard": {"pods": hard}, "used": {"pods": used}},
    }


def refused(ago: float, quota_name: str = "chaoskit-quota") -> dict[str, Any]:
    return {
        "reason": "FailedCreate",
        "count": 4,
        "lastTimestamp": iso_at(NOW - ago),
        "metadata": {"namespace": "demo"},
        "involvedObject": {"kind": "ReplicaSet", "name": "web-6cfd75477", "namespace": "demo"},
        "message": f'Error creating: pods "web-6cfd75477-abcde" is forbidden: exceeded quota: {quota_name}, '
        "requested: pods=1, used: pods=3, limited: pods=3",
    }


def workloads(quotas: list[dict[str, Any]], events: list[dict[str, Any]], now: float = NOW) -> WorkloadsEvidence:
    return WorkloadsEvidence(
        now, NONE, NONE, NONE, NONE, NONE, NONE, {}, NONE, Fetched({"items": quotas}), Fetched({"items": events})
    )


def test_a_quota_refusing_pods_is_named_with_its_figures_and_is_not_a_component_failure() -> None:
    findings = WorkloadsDiagnoser().analyze(workloads([quota("3", "3")], [refused(20)]))
    assert titles(findings) == [
        "warning: ResourceQuota chaoskit-quota in namespace demo refuses pods (pods used 3/hard 3): 4 pod "
        "creation(s) refused, exceeded quota, for ReplicaSet/web-6cfd75477"
    ]
    (f,) = findings
    assert f.probable_cause.startswith("not a component failure") and status_of(findings) == "degraded"
    assert f.entity == "resourcequota/demo/chaoskit-quota" and "replicaset/demo/web-6cfd75477" in f.affects


def test_old_refusals_or_another_quota_are_not_news() -> None:
    assert WorkloadsDiagnoser().analyze(workloads([quota("3", "3")], [refused(900)])) == []
    assert WorkloadsDiagnoser().analyze(workloads([quota("3", "3")], [refused(5, "other")])) == []


def test_recorded_quota_refusing_the_probe_s_second_pod_leaves_the_controller_manager_ok() -> None:
    d = "controller-manager/quota"
    at = float(text(f"{d}/collected-at.txt"))
    ev = workloads(obj(f"{d}/resourcequotas.json")["items"], obj(f"{d}/events.json")["items"], now=at)
    assert titles(WorkloadsDiagnoser().analyze(ev)) == [
        "warning: ResourceQuota chaoskit-quota in namespace chaoskit-quota refuses pods (pods used 1/hard 1): 9 pod "
        "creation(s) refused, exceeded quota, for ReplicaSet/chaoskit-quota-probe"
    ]
    assert ControllerManagerDiagnoser().report(controller_manager(), "cp").status == "ok"
