"""The scheduler's analysis: recorded health, lease, nodes and FailedScheduling events, plus the Pending pods and
events each scheduler fault leaves (messages in kube-scheduler v1.34's wording)."""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime
from typing import Any

from diagnose_evidence import DOWN, NO_ANSWER, iso_at, obj, process, scheduler, titles

from chaoskit.components.placement import untolerated, wants
from chaoskit.components.scheduler import latest_failed_scheduling
from chaoskit.components.workloads import Scheduling, Seen, pod_symptoms
from chaoskit.diagnosers.kit.base import status_of
from chaoskit.diagnosers.kit.common import items
from chaoskit.diagnosers.kit.refused import Grants
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.diagnosers.scheduler import SchedulerDiagnoser, SchedulerEvidence

# kube-scheduler's own messages: a tainted control plane and two workers, for each of the fault's reasons
RESOURCES = (
    "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. preemption: 0/3 "
    "nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for "
    "incoming pod."
)
POLICY = (
    "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)

NO_ROLES = Fetched({"items": []})


def pod(name: str, created: float, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "chaoskit-faults",
            "creationTimestamp": iso_at(created),
            "labels": {"pod-template-hash": "6c9f"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "chaoskit-unschedulable-6c9f"}],
        },
        "spec": {"containers": [{"name": "web"}], **spec},
        "status": {"phase": "Pending"},
    }


def failed_scheduling(p: dict[str, Any], message: str, at: float) -> dict[str, Any]:
    return {
        "involvedObject": {"kind": "Pod", "name": p["metadata"]["name"], "namespace": "chaoskit-faults"},
        "reason": "FailedScheduling",
        "message": message,
        "type": "Warning",
        "count": 3,
        "lastTimestamp": iso_at(at),
        "eventTime": None,
    }


def pending(message: str | None, age: float = 60, **spec: Any) -> SchedulerEvidence:
    ev = scheduler()
    pods = [pod(f"chaoskit-unschedulable-{i}", ev.collected_at - age, **spec) for i in range(2)]
    events = [failed_scheduling(p, message, ev.collected_at - 5) for p in pods] if message else []
    recorded = obj("scheduler/events.json")
    return scheduler(pending=Fetched({"items": pods}), events=Fetched({"items": recorded["items"] + events}))


def analyze(ev: SchedulerEvidence) -> list[str]:
    return titles(SchedulerDiagnoser().analyze(ev))


def test_healthy_scheduler_has_no_findings_despite_old_failed_scheduling_events() -> None:
    ev = scheduler()
    assert ev.events.data["items"], "the recorded cluster has FailedScheduling events from its start"
    report = SchedulerDiagnoser().report(ev, "chaoskit-control-plane")
    assert report.status == "ok" and report.findings == ()
    assert [c.check for c in report.checks] == ["process", "healthz", "leader-lease", "pending-pods"]


def unschedulable(ev: SchedulerEvidence) -> list[Seen]:
    """What the workloads' symptoms say of the same moment: the pods the scheduler tried and could not place."""
    return pod_symptoms(
        items(ev.pending),
        ev.collected_at,
        pending_after=30,
        ready_after=60,
        last_words={},
        scheduling=Scheduling(latest_failed_scheduling(items(ev.events)), items(ev.nodes), 10),
    )


def test_a_pod_no_node_fits_is_not_the_schedulers_fault_but_its_workloads() -> None:
    ev = pending(RESOURCES)
    report = SchedulerDiagnoser().report(ev, "chaoskit-control-plane")
    assert report.status == "ok" and report.findings == ()  # the scheduler did its job
    assert report.checks[-1].observed["with_failed_scheduling"] == 2
    (s,) = unschedulable(ev)
    assert s.entity == "deployment/chaoskit-faults/chaoskit-unschedulable"
    assert s.text == (
        "2 pod(s) of deployment/chaoskit-faults/chaoskit-unschedulable unschedulable: insufficient resources "
        "(chaoskit-unschedulable-0, chaoskit-unschedulable-1)"
    )
    assert "2 Insufficient cpu" in s.cause and any("maxReplicas" in step for step in s.remediation)
    assert s.co_causes == () and "component/scheduler" not in s.touches


def test_pods_pinned_to_a_tainted_node_are_blocked_by_the_taint_and_name_the_node() -> None:
    selector = {"nodeSelector": {"kubernetes.io/hostname": "chaoskit-control-plane"}}
    (s,) = unschedulable(pending(POLICY, **selector))
    assert "unschedulable: untolerated taint" in s.text
    assert "chaoskit-control-plane: node-role.kubernetes.io/control-plane:NoSchedule" in s.cause
    assert s.co_causes == ()  # the control plane's own taint is no one's doing: the pin is the whole cause


def test_pods_pinned_to_a_node_someone_tainted_name_the_node_and_the_pin() -> None:
    ev = pending(POLICY, nodeSelector={"kubernetes.io/hostname": "chaoskit-worker"})
    nodes = copy.deepcopy(items(ev.nodes))
    worker = next(n for n in nodes if n["metadata"]["name"] == "chaoskit-worker")
    worker["spec"]["taints"] = [{"key": "dedicated", "value": "ops", "effect": "NoSchedule"}]
    (s,) = unschedulable(scheduler(pending=ev.pending, events=ev.events, nodes=Fetched({"items": nodes})))
    assert "unschedulable: untolerated taint" in s.text and s.co_causes == ("node/chaoskit-worker",)
    assert "pins its pods to them" in s.cause


def test_pods_pinned_to_a_cordoned_node_name_the_node_and_the_pin() -> None:
    ev = pending(POLICY, nodeSelector={"kubernetes.io/hostname": "chaoskit-worker"})
    nodes = copy.deepcopy(items(ev.nodes))
    worker = next(n for n in nodes if n["metadata"]["name"] == "chaoskit-worker")
    worker["spec"]["unschedulable"] = True
    (s,) = unschedulable(scheduler(pending=ev.pending, events=ev.events, nodes=Fetched({"items": nodes})))
    assert "unschedulable: cordoned node" in s.text and s.co_causes == ("node/chaoskit-worker",)


def test_affinity_no_node_matches_is_blocked_by_the_policy_with_the_same_message() -> None:
    term = {"matchExpressions": [{"key": "chaoskit.dev/no-such-label", "operator": "In", "values": ["true"]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    (s,) = unschedulable(pending(POLICY, affinity=affinity))
    assert "unschedulable: node affinity/selector" in s.text and "no node among 3 matches" in s.cause
    assert s.co_causes == ()


def test_placement_honours_tolerations_and_selectors() -> None:
    control_plane = obj("scheduler/nodes.json")["items"][0]
    pinned = {"spec": {"nodeSelector": {"kubernetes.io/hostname": "chaoskit-control-plane"}}}
    assert wants(pinned, control_plane) and untolerated(pinned, control_plane) == [
        "node-role.kubernetes.io/control-plane:NoSchedule"
    ]
    tolerating = {
        "spec": {
            **pinned["spec"],
            "tolerations": [
                {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
            ],
        }
    }
    assert untolerated(tolerating, control_plane) == []
    not_in = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["chaoskit-control-plane"]}
    avoiding = {
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [not_in]}]
                    }
                }
            }
        }
    }
    assert not wants(avoiding, control_plane)


def test_scheduler_down_leaves_pending_pods_without_events_and_is_failed() -> None:
    parked = "/etc/kubernetes/chaoskit-parked/kube-scheduler.yaml"
    base = pending(None)
    ev = scheduler(
        pending=base.pending,
        events=base.events,
        healthz=NO_ANSWER,
        process=process("kube-scheduler", "", manifests=(parked,)),
        collected_at=base.collected_at + 60,
    )
    findings = SchedulerDiagnoser().analyze(ev)
    assert status_of(findings) == "failed"
    assert [t.split(" (")[0] for t in titles(findings)] == [
        "critical: kube-scheduler is not running: its static-pod manifest is not in /etc/kubernetes/manifests",
        "critical: kube-scheduler /healthz does not answer on :10259",
        "critical: No kube-scheduler is leading: lease last renewed 61s ago",
        "critical: 2 pod(s) Pending with no FailedScheduling event",
    ]


def test_pending_without_events_while_the_scheduler_is_healthy_is_a_warning() -> None:
    (title,) = analyze(pending(None))
    assert title.startswith("warning: 2 pod(s) Pending with no FailedScheduling event")


def test_pods_pending_for_a_few_seconds_are_not_counted() -> None:
    assert analyze(pending(RESOURCES, age=5)) == []


def test_a_pod_the_scheduler_failed_counts_sooner_than_one_nothing_tried() -> None:
    assert [s.kind for s in unschedulable(pending(RESOURCES, age=12))] == ["unschedulable"]  # its event: a verdict
    assert analyze(pending(None, age=12)) == [] and unschedulable(pending(None, age=12)) == []  # nobody tried yet


def test_api_unavailable_skips_the_api_checks_without_failing_the_scheduler() -> None:
    report = SchedulerDiagnoser().report(scheduler(pending=DOWN, events=DOWN, lease=DOWN, nodes=DOWN), "cp")
    assert report.status == "ok"
    assert [f.title for f in report.findings] == [
        "API-side evidence unavailable (leader-lease)",
        "API-side evidence unavailable (pending-pods)",
    ]


def test_newest_event_per_pod_wins() -> None:
    ev = pending(RESOURCES)
    older = copy.deepcopy(ev.events.data["items"][-1])
    older["message"], older["lastTimestamp"] = POLICY, iso_at(ev.collected_at - 50)
    ev = scheduler(pending=ev.pending, events=Fetched({"items": [*ev.events.data["items"], older]}))
    assert [s.text.split(": ")[1].split(" (")[0] for s in unschedulable(ev)] == ["insufficient resources"]


def forbidden_line(at: float) -> str:
    stamp = datetime.fromtimestamp(at, UTC).strftime("E%m%d %H:%M:%S.000000")
    return (
        f'{stamp}       1 reflector.go:205] "Failed to watch" err="failed to list *v1.Pod: pods is forbidden: '
        'User \\"system:kube-scheduler\\" cannot list resource \\"pods\\" in API group \\"\\" at the cluster scope"'
    )


def test_a_scheduler_refused_by_rbac_names_its_missing_binding_not_itself() -> None:
    ev = pending(None)
    refused = dataclasses.replace(
        ev,
        process=process("kube-scheduler", log=forbidden_line(ev.collected_at - 5)),
        grants=Grants(Fetched({"items": []}), NO_ROLES),
    )
    (f,) = SchedulerDiagnoser().analyze(refused)
    assert f.title.endswith("system:kube-scheduler cannot list pods (403)")
    assert f.entity == "clusterrolebinding/system:kube-scheduler"
    assert "--clusterrole=system:kube-scheduler --user=system:kube-scheduler" in " ".join(f.remediation)


def test_a_scheduler_whose_binding_stands_names_the_role_short_of_the_rule() -> None:
    ev = pending(None)
    subject = {"kind": "User", "name": "system:kube-scheduler"}
    other = {"metadata": {"name": "system:volume-scheduler"}, "subjects": [subject]}
    binding = {"metadata": {"name": "system:kube-scheduler"}, "subjects": [subject]}
    refused = dataclasses.replace(
        ev,
        process=process("kube-scheduler", log=forbidden_line(ev.collected_at - 5)),
        grants=Grants(Fetched({"items": [other, binding]}), NO_ROLES),
    )
    (f,) = SchedulerDiagnoser().analyze(refused)
    assert f.entity == "clusterrole/system:kube-scheduler" and "lacks this rule" in f.probable_cause
    only_other = dataclasses.replace(refused, grants=Grants(Fetched({"items": [other]}), NO_ROLES))
    (g,) = SchedulerDiagnoser().analyze(only_other)
    assert g.entity == "clusterrolebinding/system:kube-scheduler" and "is gone" in g.probable_cause


def test_a_refusal_minutes_old_is_history() -> None:
    ev = pending(None)
    old = dataclasses.replace(ev, process=process("kube-scheduler", log=forbidden_line(ev.collected_at - 300)))
    (title,) = analyze(old)
    assert "Pending with no FailedScheduling event" in title


def test_a_refusal_the_rbac_grants_again_is_history() -> None:
    ev = pending(None)
    subject = {"kind": "User", "name": "system:kube-scheduler"}
    binding = {
        "metadata": {"name": "system:kube-scheduler"},
        "subjects": [subject],
        "roleRef": {"kind": "ClusterRole", "name": "system:kube-scheduler"},
    }
    role = {
        "metadata": {"name": "system:kube-scheduler"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}],
    }
    fixed = dataclasses.replace(
        ev,
        process=process("kube-scheduler", log=forbidden_line(ev.collected_at - 5)),
        grants=Grants(Fetched({"items": [binding]}), Fetched({"items": [role]})),
    )
    (title,) = analyze(fixed)
    assert "Pending with no FailedScheduling event" in title
