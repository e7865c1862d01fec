"""Scheduler diagnosis: is kube-scheduler there and leading, and why are pods Pending.

The document's two scheduler faults look alike from a Deployment's side (pods stay Pending) and are told apart by
the events: a working scheduler that cannot place a pod writes FailedScheduling with a reason per node ("Insufficient
cpu", "untolerated taint", "didn't match Pod's node affinity/selector"); a scheduler that is down writes nothing.
"""

# Over 300 lines: one component's evidence and every judgement of it, read in one place (next: evidence apart).

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from chaoskit.components import scheduler
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    age,
    api_unavailable,
    failing_checks,
    items,
    rounded,
    uncollected,
)
from chaoskit.diagnosers.kit.leases import assess_leader_lease
from chaoskit.diagnosers.kit.placement import blocked_by_policy
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.diagnosers.kit.staticpod import ProcessState, assess_process, collect_local
from chaoskit.model.params import FaultParams
from chaoskit.model.timeline import api_time
from chaoskit.seams.scrape import Metrics

HEALTHZ = f"{scheduler.HEALTHZ}?verbose"
PENDING_PODS = "/api/v1/pods"
FAILED_SCHEDULING = "/api/v1/events"
LEASE = scheduler.LEASE

# What a FailedScheduling message says per node, and what that means (kube-scheduler's filter plugins' wording).
REASONS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "resources": (
        "Insufficient ",
        "no node has enough unrequested CPU or memory for the pods' requests (an HPA scale-up that outgrew the "
        "cluster, or requests set too high)",
        (
            "lower the pods' resource requests, or add nodes (a cluster autoscaler)",
            "cap the HPA's maxReplicas at what the cluster can hold",
            "kubectl describe nodes: compare Allocatable with Allocated resources",
        ),
    ),
    "taint": (
        "untolerated taint",
        "the nodes that could take the pods carry NoSchedule taints the pods do not tolerate",
        (
            "kubectl get nodes -o custom-columns=NAME:.metadata.name,TAINTS:.spec.taints",
            "remove the taint (kubectl taint nodes NODE KEY:NoSchedule-) or add a toleration to the pods",
        ),
    ),
    "affinity": (
        "didn't match Pod's node affinity/selector",
        "the pods' nodeSelector or required node affinity matches no node's labels",
        (
            "compare the pod's nodeSelector/affinity with kubectl get nodes --show-labels",
            "fix the label on the nodes or the affinity on the workload",
        ),
    ),
    "ports": (
        "didn't have free ports",
        "the pods ask for host ports that every fitting node already uses",
        ("drop hostPort, or spread the pods",),
    ),
    "volumes": (
        "volume",
        "the pods' volumes cannot be placed with them (zone or node affinity of the volume)",
        ("kubectl describe pvc for the pods' claims",),
    ),
}
_PER_NODE = re.compile(r"nodes are available: (.*?)(?:\.\s|\.$|$)")


class SchedulerParams(FaultParams):
    pending_after: float = Field(default=30.0, description="Seconds a pod may be Pending unscheduled before it counts.")
    failed_after: float = Field(
        default=10.0, description="Seconds a pod the scheduler tried and could not place may wait before it counts."
    )
    lease_grace: float = Field(default=10.0, description="Seconds past the lease duration before it counts as stale.")


@dataclass(frozen=True)
class SchedulerEvidence:
    node: str
    collected_at: float
    healthz: HttpAnswer
    metrics: Metrics
    process: ProcessState
    pending: Fetched  # Pending pods, cluster-wide
    events: Fetched  # FailedScheduling events, cluster-wide
    lease: Fetched
    nodes: Fetched  # to tell a policy no node satisfies from nodes that are tainted


@register
class SchedulerDiagnoser(Diagnoser[SchedulerEvidence, SchedulerParams]):
    """kube-scheduler: process and manifest, /healthz, leader lease, Pending pods and FailedScheduling reasons."""

    component = "scheduler"
    Params = SchedulerParams

    def collect(self, src: Sources, node: str) -> SchedulerEvidence:
        pending = src.api.soon(PENDING_PODS, fieldSelector="status.phase=Pending")  # read while the script runs
        events = src.api.soon(FAILED_SCHEDULING, fieldSelector="reason=FailedScheduling")
        lease = src.api.soon(LEASE)
        nodes = src.api.soon("/api/v1/nodes")  # simulated ones too: the scheduler weighs them as any node
        healthz, metrics, process = collect_local(
            src, node, scheduler.PROCESS, HEALTHZ, scheduler.METRICS_URL, ("scheduler_pending_pods",)
        )
        return SchedulerEvidence(
            node=node,
            collected_at=src.clock(),
            healthz=healthz,
            metrics=metrics,
            process=process,
            pending=pending(),
            events=events(),
            lease=lease(),
            nodes=nodes(),
        )

    def assess(self, ev: SchedulerEvidence) -> list[Assessed]:
        return [
            assess_process(
                "scheduler",
                ev.node,
                ev.process,
                frozen_effect="new pods stay Pending with no FailedScheduling events",
                down_effect="new pods (an HPA scale-up's too) stay Pending with no FailedScheduling events",
            ),
            self._healthz(ev),
            assess_leader_lease(
                "scheduler",
                "kube-scheduler",
                LEASE,
                ev.lease,
                ev.collected_at,
                self.p.lease_grace,
                effect="no pod is scheduled",
            ),
            self._pending(ev),
        ]

    def _healthz(self, ev: SchedulerEvidence) -> Assessed:
        h = ev.healthz
        e = Evidence(
            "healthz",
            f"curl -k {HEALTHZ} on {ev.node}",
            {"answer": h.describe(), "failing": ", ".join(failing_checks(h.body)) or None},
        )
        if h.answered and h.code == 200:
            return Assessed(e)
        if h.unread:
            return Assessed(e, (uncollected("scheduler", ev.node, "/healthz", h.unread, e),))
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    "scheduler",
                    "kube-scheduler /healthz "
                    + (f"fails: HTTP {h.code}" if h.answered else "does not answer on :10259"),
                    "kube-scheduler is down or unhealthy" + ("" if ev.process.running else " (see the process check)"),
                    (e,),
                    ("crictl ps -a --name '^kube-scheduler$' and crictl logs on the control-plane node",),
                ),
            ),
        )

    def _pending(self, ev: SchedulerEvidence) -> Assessed:
        source = f"GET {PENDING_PODS}?fieldSelector=status.phase=Pending, {FAILED_SCHEDULING}?reason=FailedScheduling"
        if not ev.pending.ok:
            return api_unavailable("scheduler", "pending-pods", source, ev.pending.error)
        latest = _latest_events(items(ev.events))
        # a FailedScheduling event is the scheduler's own verdict: it counts sooner than a pod nothing has tried yet
        waiting = [
            p
            for p in items(ev.pending)
            if not p.get("spec", {}).get("nodeName")
            and not p.get("spec", {}).get("schedulingGates")
            and (age(p.get("metadata", {}).get("creationTimestamp"), ev.collected_at) or 0)
            >= (self.p.failed_after if _pod_key(p) in latest else self.p.pending_after)
        ]
        queues = ev.metrics.group("scheduler_pending_pods", "queue")
        by_reason: dict[str, list[str]] = {}
        details: dict[str, str] = {}
        silent: list[str] = []
        messages: dict[str, str] = {}
        for pod in waiting:
            key = _pod_key(pod)
            message = latest.get(key, "")
            if not message:
                silent.append(key)
                continue
            messages[key] = message
            reason, detail = _classify(pod, message, items(ev.nodes))
            by_reason.setdefault(reason, []).append(key)
            details.setdefault(reason, detail)
        base = Evidence(
            "pending-pods",
            source,
            {
                "pending_unscheduled": len(waiting),
                "with_failed_scheduling": len(messages),
                "without_events": len(silent),
            },
            events=tuple(f"{k}: {m}" for k, m in list(messages.items())[:10]),
            metrics=rounded((f"scheduler_pending_pods{{queue={q}}}", v) for q, v in queues.items()),
        )
        findings: list[Finding] = []
        for reason, pods in by_reason.items():
            _, cause, fix = REASONS.get(reason, ("", "the scheduler's filters rule out every node", ()))
            findings.append(
                Finding(
                    "warning",
                    "scheduler",
                    f"{len(pods)} pod(s) unschedulable: {_label(reason)} ({', '.join(pods[:3])})",
                    f"{cause}: {details[reason]}",
                    (base,),
                    (*fix, f"kubectl describe pod -n {pods[0].replace('/', ' ')}: the Events section"),
                )
            )
        if silent:
            findings.append(_nobody_tried(ev, silent, base))
        return Assessed(base, tuple(findings))


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _latest_events(events: list[dict[str, Any]]) -> dict[str, str]:
    """The newest FailedScheduling message per pod (namespace/name)."""
    newest: dict[str, tuple[float, str]] = {}
    for e in events:
        obj = e.get("involvedObject") or e.get("regarding") or {}
        if obj.get("kind") != "Pod":
            continue
        key = f"{obj.get('namespace', '')}/{obj.get('name', '')}"
        when = max(
            api_time(e.get("lastTimestamp")) or 0.0,
            api_time(e.get("eventTime")) or 0.0,
            api_time((e.get("series") or {}).get("lastObservedTime")) or 0.0,
        )
        if key not in newest or when >= newest[key][0]:
            newest[key] = (when, str(e.get("message") or e.get("note") or ""))
    return {k: m for k, (_, m) in newest.items()}


def _classify(pod: Mapping[str, Any], message: str, nodes: list[dict[str, Any]]) -> tuple[str, str]:
    """The reason that blocks the pod, in REASONS' terms, and what shows it.

    Lack of resources is named by the message itself; taints against affinity needs the pod and the nodes (see
    placement); the message's order decides the rest.
    """
    kinds = _reasons(message)
    said = _per_node(message)
    if "resources" in kinds:
        return "resources", said
    policy = blocked_by_policy(pod, nodes)
    if policy is not None:
        return policy
    return next((k for k in ("ports", "volumes", "taint", "affinity") if k in kinds), "other"), said


def _per_node(message: str) -> str:
    m = _PER_NODE.search(message)
    return (m.group(1) if m else message).strip()


def _reasons(message: str) -> list[str]:
    """The kinds of reasons a FailedScheduling message gives, in REASONS' terms ("other" when none fits)."""
    text = _per_node(message)
    found = [name for name, (needle, _, _) in REASONS.items() if needle.lower() in text.lower()]
    return found or ["other"]


def _label(reason: str) -> str:
    return {
        "resources": "insufficient resources",
        "taint": "untolerated taint",
        "affinity": "node affinity/selector",
        "ports": "host ports",
        "volumes": "volume placement",
    }.get(reason, "no node fits")


def _nobody_tried(ev: SchedulerEvidence, silent: list[str], base: Evidence) -> Finding:
    """Pods Pending with no FailedScheduling event: no scheduler tried them (critical when it is not running)."""
    h, p = ev.healthz, ev.process  # a look that did not finish says neither up nor down
    down = (not h.unread and not (h.answered and h.code == 200)) or (not p.unread and not p.running)
    return Finding(
        "critical" if down else "warning",
        "scheduler",
        f"{len(silent)} pod(s) Pending with no FailedScheduling event ({', '.join(silent[:3])})",
        "kube-scheduler is not running, so nothing tries to place them (see the process and healthz checks)"
        if down
        else "no scheduler has tried them: a schedulerName no scheduler serves, or a scheduler that "
        "is not leading or hangs",
        (base,),
        (
            "restore kube-scheduler (its manifest in /etc/kubernetes/manifests)"
            if down
            else "kubectl get pod -o jsonpath='{.spec.schedulerName}' and the scheduler's logs",
        ),
    )
