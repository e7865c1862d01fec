"""Scheduler diagnosis: is kube-scheduler there and leading, and does it try the Pending pods.

The document's two scheduler faults look alike from a Deployment's side (pods stay Pending) and are told apart by
the events: a working scheduler that cannot place a pod writes FailedScheduling with a reason per node (too little
CPU, a taint, a node affinity: chaoskit.components.scheduler.REASONS); a scheduler that is down writes nothing.
Only the second is the scheduler's: the first is the scheduler doing its job, and the workloads diagnoser names what
keeps those pods out (their own spec, a cordoned or tainted node), so the scheduler stays ok.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from chaoskit.components import scheduler
from chaoskit.components.rbac import refusals
from chaoskit.components.scheduler import latest_failed_scheduling
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
from chaoskit.diagnosers.kit.refused import Grants, fresh, read_grants, refused
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.diagnosers.kit.staticpod import ProcessState, assess_process, collect_local
from chaoskit.model.params import FaultParams
from chaoskit.seams.scrape import Metrics

HEALTHZ = f"{scheduler.HEALTHZ}?verbose"
PENDING_PODS = "/api/v1/pods"
FAILED_SCHEDULING = "/api/v1/events"
LEASE = scheduler.LEASE


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
    grants: Grants | None = None  # the cluster's RBAC, read only when its log shows a refusal (403)


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
        now = src.clock()
        return SchedulerEvidence(
            node=node,
            collected_at=now,
            healthz=healthz,
            metrics=metrics,
            process=process,
            pending=pending(),
            events=events(),
            lease=lease(),
            nodes=nodes(),
            grants=read_grants(src) if refusals(process.log, now) else None,
        )

    def assess(self, ev: SchedulerEvidence) -> list[Assessed]:
        checks = [
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
        if forbidden := self._refused(ev):  # refused, it never syncs nor leads: what else fails is its consequence
            return [*(c.because_of(forbidden, ev.node) for c in checks), Assessed(forbidden.evidence[0], (forbidden,))]
        return checks

    def _refused(self, ev: SchedulerEvidence) -> Finding | None:
        return refused(
            scheduler.IDENTITY,
            ev.node,
            fresh(ev.process.log, ev.collected_at),
            ev.grants,
            "it cannot list or watch the pods and nodes it places, so new pods stay Pending with no "
            "FailedScheduling event",
            "kube-scheduler's log",
        )

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
                    + (f"fails: HTTP {h.code}" if h.answered else f"does not answer on :{scheduler.PORT}"),
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
        latest = latest_failed_scheduling(items(ev.events))
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
        tried = {_pod_key(p): latest[_pod_key(p)] for p in waiting if _pod_key(p) in latest}
        silent = [_pod_key(p) for p in waiting if _pod_key(p) not in latest]
        base = Evidence(
            "pending-pods",
            source,
            {
                "pending_unscheduled": len(waiting),
                "with_failed_scheduling": len(tried),
                "without_events": len(silent),
            },
            events=tuple(f"{k}: {m}" for k, m in list(tried.items())[:10]),
            metrics=rounded((f"scheduler_pending_pods{{queue={q}}}", v) for q, v in queues.items()),
        )
        # a pod the scheduler tried and could not place is the scheduler doing its job: the workloads' symptoms name
        # what keeps it out (its spec, a cordoned or tainted node); only pods nothing tried are the scheduler's
        # refused by the authorizer, it tries nothing: the refusal is the finding, and it explains these pods
        if self._refused(ev):
            return Assessed(base)
        return Assessed(base, (_nobody_tried(ev, silent, base),) if silent else ())


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


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
