"""Controller manager diagnosis: is it there and leading, are its work queues moving, do the objects it reconciles
converge.

A deadlocked or frozen controller manager keeps its port open for a while but stops renewing its leader lease, and
then nothing converges: the document's example is an HPA scale-up after which the pod count never settles. So the
lease age and the objects' own convergence (observedGeneration, replicas, HPA conditions) are the evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from chaoskit.diagnosers.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.common import (
    HttpAnswer,
    age,
    api_unavailable,
    failing_checks,
    items,
)
from chaoskit.diagnosers.leases import LeaseState, assess_leader_lease
from chaoskit.diagnosers.metrics import Metrics, rounded
from chaoskit.diagnosers.sources import Fetched, Sources
from chaoskit.diagnosers.staticpod import ProcessState, assess_process, collect_local
from chaoskit.faults.base import FaultParams

HEALTHZ = "https://127.0.0.1:10257/healthz?verbose"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
DEPLOYMENTS = "/apis/apps/v1/deployments"
HPAS = "/apis/autoscaling/v2/horizontalpodautoscalers"
METRICS = ("workqueue_depth", "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds")


class ControllerManagerParams(FaultParams):
    lease_grace: float = Field(default=10.0, description="Seconds past the lease duration before it counts as stale.")
    max_queue_depth: float = Field(default=100, description="Items waiting in one work queue: more is a backlog.")
    max_unfinished_work: float = Field(default=300, description="Seconds of work in progress in one queue: stuck.")
    converge_after: float = Field(default=120, description="Seconds a Deployment or HPA may take to converge.")


@dataclass(frozen=True)
class ControllerManagerEvidence:
    node: str
    collected_at: float
    healthz: HttpAnswer
    metrics: Metrics
    process: ProcessState
    lease: Fetched
    deployments: Fetched
    hpas: Fetched


@register
class ControllerManagerDiagnoser(Diagnoser[ControllerManagerEvidence, ControllerManagerParams]):
    """kube-controller-manager: process, /healthz per controller, leader lease, work queues, Deployments and HPAs."""

    component = "controller-manager"
    Params = ControllerManagerParams

    def collect(self, src: Sources, node: str) -> ControllerManagerEvidence:
        healthz, metrics, process = collect_local(
            src, node, "kube-controller-manager", HEALTHZ, "https://127.0.0.1:10257/metrics", METRICS
        )
        return ControllerManagerEvidence(
            node=node,
            collected_at=src.clock(),
            healthz=healthz,
            metrics=metrics,
            process=process,
            lease=src.api.fetch(LEASE),
            deployments=src.api.fetch(DEPLOYMENTS),
            hpas=src.api.fetch(HPAS),
        )

    def assess(self, ev: ControllerManagerEvidence) -> list[Assessed]:
        return [
            assess_process("controller-manager", ev.node, ev.process,
                           frozen_effect="ReplicaSets, endpoints, HPAs and node health are not reconciled",
                           down_effect="nothing is reconciled: no self-healing, HPA scale-ups never converge"),
            self._healthz(ev),
            assess_leader_lease("controller-manager", "kube-controller-manager", LEASE, ev.lease, ev.collected_at,
                                self.p.lease_grace, effect="no controller loop runs: nothing converges"),
            self._workqueues(ev),
            self._deployments(ev),
            self._hpas(ev),
        ]  # fmt: skip

    def _healthz(self, ev: ControllerManagerEvidence) -> Assessed:
        h = ev.healthz
        failing = failing_checks(h.body)
        e = Evidence("healthz", f"curl -k {HEALTHZ} on {ev.node}",
                     {"answer": h.describe(), "failing": ", ".join(failing) or None})  # fmt: skip
        if h.answered and h.code == 200:
            return Assessed(e)
        if h.answered:
            title = f"kube-controller-manager /healthz fails: {', '.join(failing) or f'HTTP {h.code}'}"
            cause = "controllers report themselves unhealthy (the [-] lines name them)"
        else:
            title = "kube-controller-manager /healthz does not answer on :10257"
            cause = "kube-controller-manager is down or hangs" + ("" if ev.process.running else " (see process)")
        return Assessed(e, (Finding(
            "critical", "controller-manager", title, cause, (e,),
            ("crictl logs of kube-controller-manager on the control-plane node: look for controller loop errors "
             "and panics",),
        ),))  # fmt: skip

    def _workqueues(self, ev: ControllerManagerEvidence) -> Assessed:
        m = ev.metrics
        source = "workqueue_depth, workqueue_unfinished_work_seconds from https://127.0.0.1:10257/metrics"
        if not m:
            return Assessed(Evidence("workqueues", source, {"error": m.error}, available=False))
        depth = m.group("workqueue_depth", "name")
        unfinished = m.group("workqueue_unfinished_work_seconds", "name")
        deep = {q: d for q, d in depth.items() if d > self.p.max_queue_depth}
        stuck = {q: s for q, s in unfinished.items() if s > self.p.max_unfinished_work}
        top = sorted(depth.items(), key=lambda kv: -kv[1])[:3]
        e = Evidence("workqueues", source, {"queues": len(depth), "deepest": ", ".join(f"{q}: {d:g}" for q, d in top)},
                     metrics=rounded([*((f"depth{{{q}}}", d) for q, d in deep.items()),
                                      *((f"unfinished_s{{{q}}}", s) for q, s in stuck.items())]))  # fmt: skip
        findings = []
        if deep:
            findings.append(Finding(
                "warning", "controller-manager",
                f"controller work queues backed up: {', '.join(f'{q} ({d:g})' for q, d in deep.items())}",
                "a controller cannot keep up or keeps failing and re-queueing (API errors, a slow API server)",
                (e,), ("crictl logs of kube-controller-manager: errors of those controllers",),
            ))  # fmt: skip
        if stuck:
            findings.append(Finding(
                "warning", "controller-manager",
                f"controller work in progress for too long: {', '.join(f'{q} ({s:.0f}s)' for q, s in stuck.items())}",
                "a controller's worker is stuck on one item (a deadlock or a call that never returns)",
                (e,), ("dump kube-controller-manager's goroutines (/debug/pprof/goroutine?debug=2 with profiling on)",
                       "restart kube-controller-manager (move its manifest out and back)"),
            ))  # fmt: skip
        return Assessed(e, tuple(findings))

    def _deployments(self, ev: ControllerManagerEvidence) -> Assessed:
        if not ev.deployments.ok:
            return api_unavailable("controller-manager", "deployments", f"GET {DEPLOYMENTS}", ev.deployments.error)
        behind: list[str] = []
        for d in items(ev.deployments):
            problem = _deployment_problem(d, ev.collected_at, self.p.converge_after)
            if problem:
                behind.append(f"{_key(d)}: {problem}")
        e = Evidence("deployments", f"GET {DEPLOYMENTS}",
                     {"deployments": len(items(ev.deployments)), "not_converging": len(behind)},
                     conditions=tuple(behind[:10]))  # fmt: skip
        if not behind:
            return Assessed(e)
        lease_stale = ev.lease.ok and _lease_stale(ev, self.p.lease_grace)
        return Assessed(e, (Finding(
            "warning", "controller-manager", f"{len(behind)} Deployment(s) do not converge ({behind[0]})",
            ("the controller manager is not reconciling (its lease is stale)" if lease_stale else
             "the deployment/replicaset controllers have not brought the pods to the desired count: pods that "
             "cannot be created (quota, admission), scheduled (see scheduler) or started (see kubelet)"),
            (e,), ("kubectl describe deployment and its newest ReplicaSet: the Events and conditions say why",
                   "crictl logs of kube-controller-manager for replicaset controller errors"),
        ),))  # fmt: skip

    def _hpas(self, ev: ControllerManagerEvidence) -> Assessed:
        if not ev.hpas.ok:
            return api_unavailable("controller-manager", "hpas", f"GET {HPAS}", ev.hpas.error)
        problems: list[str] = []
        for h in items(ev.hpas):
            problem = _hpa_problem(h, ev.collected_at, self.p.converge_after)
            if problem:
                problems.append(f"{_key(h)}: {problem}")
        e = Evidence("hpas", f"GET {HPAS}", {"hpas": len(items(ev.hpas)), "not_converging": len(problems)},
                     conditions=tuple(problems[:10]))  # fmt: skip
        if not problems:
            return Assessed(e)
        return Assessed(e, (Finding(
            "warning", "controller-manager", f"{len(problems)} HorizontalPodAutoscaler(s) do not converge "
            f"({problems[0]})",
            "the HPA controller cannot read metrics (metrics-server), cannot scale its target, or its target does "
            "not follow the desired replicas",
            (e,), ("kubectl describe hpa: the conditions AbleToScale/ScalingActive and the events",
                   "kubectl top pods: do resource metrics exist? (metrics-server in kube-system)"),
        ),))  # fmt: skip


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _lease_stale(ev: ControllerManagerEvidence, grace: float) -> bool:
    return LeaseState.of(ev.lease.data, ev.collected_at).stale(grace)


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return {}


def _deployment_problem(d: dict[str, Any], now: float, after: float) -> str:
    meta, spec, status = d.get("metadata", {}), d.get("spec", {}), d.get("status", {})
    generation, observed = int(meta.get("generation") or 0), int(status.get("observedGeneration") or 0)
    since_change = age(_newest_time(d), now)
    if observed < generation and (since_change is None or since_change > after):
        return f"generation {generation} not observed (observed {observed})"
    progressing = _condition(d, "Progressing")
    if progressing.get("status") == "False" and progressing.get("reason") == "ProgressDeadlineExceeded":
        return f"ProgressDeadlineExceeded: {progressing.get('message', '')}"
    wanted = int(spec.get("replicas", 1))
    have = int(status.get("updatedReplicas") or 0), int(status.get("availableReplicas") or 0)
    stalled = age(progressing.get("lastUpdateTime"), now)
    if min(have) < wanted and stalled is not None and stalled > after:
        return f"{have[1]}/{wanted} available, {have[0]} updated, no progress for {stalled:.0f}s"
    return ""


def _hpa_problem(h: dict[str, Any], now: float, after: float) -> str:
    for kind in ("AbleToScale", "ScalingActive"):
        c = _condition(h, kind)
        if c.get("status") == "False" and (age(c.get("lastTransitionTime"), now) or 0) > after:
            return f"{kind}=False {c.get('reason', '')}: {c.get('message', '')}"[:300]
    status = h.get("status", {})
    desired, current = status.get("desiredReplicas"), status.get("currentReplicas")
    since = age(status.get("lastScaleTime"), now)
    if desired is not None and current is not None and desired != current and since is not None and since > after:
        return f"desired {desired} replicas, current {current}, {since:.0f}s after the last scale"
    return ""


def _newest_time(obj: dict[str, Any]) -> str | None:
    times = [f.get("time") for f in obj.get("metadata", {}).get("managedFields") or []]
    strings = sorted(t for t in times if isinstance(t, str))
    return strings[-1] if strings else None
