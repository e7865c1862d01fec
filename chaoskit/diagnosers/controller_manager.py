"""Controller manager diagnosis: is it there and leading, does each controller inside it work, are its work queues
moving, do the objects it reconciles converge, does a quota refuse their pods.

A deadlocked or frozen controller manager keeps its port open for a while but stops renewing its leader lease, and
then nothing converges: the document's example is an HPA scale-up after which the pod count never settles. So the
lease age and the objects' own convergence (observedGeneration, replicas, HPA conditions) are the evidence. One
controller can also stop while the process stays up, leading and healthy: its work queue fills and nothing takes
from it, or it is not running at all (chaoskit.diagnosers.kit.controllers names it). A full ResourceQuota stops a
scale-out with every controller working (chaoskit.diagnosers.kit.quotas).
"""

# Over 300 lines: one component's evidence and every judgement of it, read in one place (next: evidence apart).

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from chaoskit.components import controller_manager
from chaoskit.components.common import flags_of
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    age,
    api_unavailable,
    failing_checks,
    items,
    metrics_of,
    rounded,
    uncollected,
)
from chaoskit.diagnosers.kit.controllers import (
    controllers_evidence,
    lagging_hpas,
    lagging_replicasets,
    missing_controllers,
    services_without_slices,
    stuck_findings,
    stuck_queues,
)
from chaoskit.diagnosers.kit.leases import LeaseState, assess_leader_lease
from chaoskit.diagnosers.kit.quotas import exhausted, quota_findings, quotas_evidence, recent_refusals
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.diagnosers.kit.staticpod import ProcessState, assess_process, collect_local
from chaoskit.model.params import FaultParams
from chaoskit.seams.scrape import Metrics, scrape_command

HEALTHZ = f"{controller_manager.HEALTHZ}?verbose"
LEASE = controller_manager.LEASE
DEPLOYMENTS = "/apis/apps/v1/deployments"
HPAS = "/apis/autoscaling/v2/horizontalpodautoscalers"
REPLICASETS = "/apis/apps/v1/replicasets"
SERVICES = "/api/v1/services"
SLICES = "/apis/discovery.k8s.io/v1/endpointslices"
QUOTAS = "/api/v1/resourcequotas"
EVENTS = "/api/v1/events"
METRICS_URL = controller_manager.METRICS_URL
METRICS = (
    "workqueue_depth",
    "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds",
    "workqueue_adds_total",
    "workqueue_work_duration_seconds_count",
)
EMPTY = Fetched({"items": []})  # evidence made without these reads (older recordings): nothing there to judge


class ControllerManagerParams(FaultParams):
    lease_grace: float = Field(default=10.0, description="Seconds past the lease duration before it counts as stale.")
    max_queue_depth: float = Field(default=100, description="Items waiting in one work queue: more is a backlog.")
    max_unfinished_work: float = Field(default=300, description="Seconds of work in progress in one queue: stuck.")
    converge_after: float = Field(default=120, description="Seconds a Deployment or HPA may take to converge.")
    window: float = Field(default=3.0, ge=1, le=60, description="Seconds between the two work queue scrapes.")
    startup_grace: float = Field(default=20, description="Seconds after taking the lease a queue alone is not stuck.")
    lag_after: float = Field(default=10, description="Seconds a ReplicaSet or Service may wait for its controller.")
    hpa_lag_after: float = Field(default=25, description="Seconds an HPA may wait for its first sync (after 15 s).")
    refusals_within: float = Field(default=600, description="Seconds a quota's refusal (FailedCreate) stays news.")


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
    metrics_after: Metrics = field(default_factory=lambda: Metrics.unavailable("one scrape only"))
    window_s: float = 0.0  # at least this long between `metrics` and `metrics_after`
    cmdline: str = ""  # the running kube-controller-manager's command line
    replicasets: Fetched = EMPTY
    services: Fetched = EMPTY
    slices: Fetched = EMPTY
    quotas: Fetched = EMPTY
    failed_creates: Fetched = EMPTY  # FailedCreate events, cluster-wide


@register
class ControllerManagerDiagnoser(Diagnoser[ControllerManagerEvidence, ControllerManagerParams]):
    """kube-controller-manager: process, /healthz per controller, leader lease, work queues, Deployments and HPAs."""

    component = "controller-manager"
    Params = ControllerManagerParams

    def collect(self, src: Sources, node: str) -> ControllerManagerEvidence:
        healthz, metrics, process = collect_local(src, node, controller_manager.PROCESS, HEALTHZ, METRICS_URL, METRICS)
        started = src.clock()
        reads = {
            name: src.api.fetch(path)
            for name, path in (
                ("lease", LEASE),
                ("deployments", DEPLOYMENTS),
                ("hpas", HPAS),
                ("replicasets", REPLICASETS),
                ("services", SERVICES),
                ("slices", SLICES),
                ("quotas", QUOTAS),
            )
        }
        failed_creates = src.api.fetch(EVENTS, fieldSelector="reason=FailedCreate")
        wait = max(0.0, self.p.window - (src.clock() - started))  # the API reads count towards the window
        # no window to measure when the first scrape got no answer: a second one would only wait out its timeout
        scrape = scrape_command(METRICS_URL, METRICS, client_cert=True)
        again = {"wait": f"sleep {wait:.2f}", "metrics": scrape} if metrics else {}
        later = src.sections(node, {**again, "cmdline": controller_manager.CMDLINE}, chains=[tuple(again)])
        return ControllerManagerEvidence(
            node=node,
            collected_at=src.clock(),
            healthz=healthz,
            metrics=metrics,
            process=process,
            metrics_after=metrics_of(later["metrics"]) if metrics else Metrics.unavailable(metrics.error),
            window_s=self.p.window,
            cmdline=later["cmdline"].text,
            failed_creates=failed_creates,
            **reads,
        )

    def assess(self, ev: ControllerManagerEvidence) -> list[Assessed]:
        return [
            assess_process(
                "controller-manager",
                ev.node,
                ev.process,
                frozen_effect="ReplicaSets, endpoints, HPAs and node health are not reconciled",
                down_effect="nothing is reconciled: no self-healing, HPA scale-ups never converge",
            ),
            self._healthz(ev),
            assess_leader_lease(
                "controller-manager",
                "kube-controller-manager",
                LEASE,
                ev.lease,
                ev.collected_at,
                self.p.lease_grace,
                effect="no controller loop runs: nothing converges",
            ),
            self._controllers(ev),
            self._workqueues(ev),
            self._quotas(ev),
            self._deployments(ev),
            self._hpas(ev),
        ]

    def _healthz(self, ev: ControllerManagerEvidence) -> Assessed:
        h = ev.healthz
        failing = failing_checks(h.body)
        e = Evidence(
            "healthz",
            f"curl -k {HEALTHZ} on {ev.node}",
            {"answer": h.describe(), "failing": ", ".join(failing) or None},
        )
        if h.answered and h.code == 200:
            return Assessed(e)
        if h.unread:
            return Assessed(e, (uncollected("controller-manager", ev.node, "/healthz", h.unread, e),))
        if h.answered:
            title = f"kube-controller-manager /healthz fails: {', '.join(failing) or f'HTTP {h.code}'}"
            cause = "controllers report themselves unhealthy (the [-] lines name them)"
        else:
            title = "kube-controller-manager /healthz does not answer on :10257"
            cause = "kube-controller-manager is down or hangs" + ("" if ev.process.running else " (see process)")
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    "controller-manager",
                    title,
                    cause,
                    (e,),
                    (
                        "crictl logs of kube-controller-manager on the control-plane node: look for controller loop "
                        "errors "
                        "and panics",
                    ),
                ),
            ),
        )

    def _controllers(self, ev: ControllerManagerEvidence) -> Assessed:
        source = (
            f"workqueue_* from {METRICS_URL} twice, {ev.window_s:g}s apart; {HEALTHZ}; GET {REPLICASETS}, "
            f"{HPAS}, {SERVICES}, {SLICES}"
        )
        healthy = ev.healthz.answered and ev.healthz.code == 200
        lease = LeaseState.of(ev.lease.data, ev.collected_at) if ev.lease.ok else None
        if not healthy or not ev.process.running or (lease is not None and lease.stale(self.p.lease_grace)):
            # the whole process is down, frozen or not leading: the checks above say so, no controller is singled out
            return Assessed(Evidence("controllers", source, {"judged": False}))
        now = ev.collected_at
        lagging = {
            "replicaset-controller": lagging_replicasets(items(ev.replicasets), now, self.p.lag_after),
            "horizontal-pod-autoscaler-controller": lagging_hpas(items(ev.hpas), now, self.p.hpa_lag_after),
            "endpointslice-controller": services_without_slices(
                items(ev.services), items(ev.slices), now, self.p.lag_after
            ),
        }
        spec = (ev.lease.data or {}).get("spec", {}) if ev.lease.ok else {}
        acquired = age(spec.get("acquireTime"), now)
        # a new leader's controllers fill their queues while they wait for their caches: early on, a queue counts as
        # stuck only when its objects already lag too
        syncing = acquired is not None and acquired < self.p.startup_grace
        queues = [
            q
            for q in stuck_queues(ev.metrics, ev.metrics_after)
            if not syncing or (q.controller is not None and lagging.get(q.controller.check))
        ]
        missing = missing_controllers(ev.healthz.body)
        flags = flags_of(ev.cmdline)
        e = controllers_evidence(source, queues, missing, lagging, flags, ev.metrics_after)
        renewed = "lease renewed" + ("" if lease is None or lease.age is None else f" {lease.age:.0f}s ago")
        return Assessed(e, tuple(stuck_findings(queues, missing, lagging, flags, ev.window_s, renewed, e)))

    def _quotas(self, ev: ControllerManagerEvidence) -> Assessed:
        source = f"GET {QUOTAS}, {EVENTS}?fieldSelector=reason=FailedCreate"
        if not ev.quotas.ok or not ev.failed_creates.ok:
            return api_unavailable("controller-manager", "quotas", source, ev.quotas.error or ev.failed_creates.error)
        refused = recent_refusals(items(ev.failed_creates), ev.collected_at, self.p.refusals_within)
        found = exhausted(items(ev.quotas), refused)
        e = quotas_evidence(source, len(items(ev.quotas)), found)
        return Assessed(e, tuple(quota_findings(found, e)))

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
        e = Evidence(
            "workqueues",
            source,
            {"queues": len(depth), "deepest": ", ".join(f"{q}: {d:g}" for q, d in top)},
            metrics=rounded(
                [
                    *((f"depth{{{q}}}", d) for q, d in deep.items()),
                    *((f"unfinished_s{{{q}}}", s) for q, s in stuck.items()),
                ]
            ),
        )
        findings = []
        if deep:
            findings.append(
                Finding(
                    "warning",
                    "controller-manager",
                    f"controller work queues backed up: {', '.join(f'{q} ({d:g})' for q, d in deep.items())}",
                    "a controller cannot keep up or keeps failing and re-queueing (API errors, a slow API server)",
                    (e,),
                    ("crictl logs of kube-controller-manager: errors of those controllers",),
                )
            )
        if stuck:
            findings.append(
                Finding(
                    "warning",
                    "controller-manager",
                    "controller work in progress for too long: "
                    f"{', '.join(f'{q} ({s:.0f}s)' for q, s in stuck.items())}",
                    "a controller's worker is stuck on one item (a deadlock or a call that never returns)",
                    (e,),
                    (
                        "dump kube-controller-manager's goroutines (/debug/pprof/goroutine?debug=2 with profiling on)",
                        "restart kube-controller-manager (move its manifest out and back)",
                    ),
                )
            )
        return Assessed(e, tuple(findings))

    def _deployments(self, ev: ControllerManagerEvidence) -> Assessed:
        if not ev.deployments.ok:
            return api_unavailable("controller-manager", "deployments", f"GET {DEPLOYMENTS}", ev.deployments.error)
        behind: list[str] = []
        for d in items(ev.deployments):
            problem = _deployment_problem(d, ev.collected_at, self.p.converge_after)
            if problem:
                behind.append(f"{_key(d)}: {problem}")
        e = Evidence(
            "deployments",
            f"GET {DEPLOYMENTS}",
            {"deployments": len(items(ev.deployments)), "not_converging": len(behind)},
            conditions=tuple(behind[:10]),
        )
        if not behind:
            return Assessed(e)
        lease_stale = ev.lease.ok and _lease_stale(ev, self.p.lease_grace)
        return Assessed(
            e,
            (
                Finding(
                    "warning",
                    "controller-manager",
                    f"{len(behind)} Deployment(s) do not converge ({behind[0]})",
                    (
                        "the controller manager is not reconciling (its lease is stale)"
                        if lease_stale
                        else "the deployment/replicaset controllers have not brought the pods to the desired count: "
                        "pods that "
                        "cannot be created (quota, admission), scheduled (see scheduler) or started (see kubelet)"
                    ),
                    (e,),
                    (
                        "kubectl describe deployment and its newest ReplicaSet: the Events and conditions say why",
                        "crictl logs of kube-controller-manager for replicaset controller errors",
                    ),
                ),
            ),
        )

    def _hpas(self, ev: ControllerManagerEvidence) -> Assessed:
        if not ev.hpas.ok:
            return api_unavailable("controller-manager", "hpas", f"GET {HPAS}", ev.hpas.error)
        problems: list[str] = []
        for h in items(ev.hpas):
            problem = _hpa_problem(h, ev.collected_at, self.p.converge_after)
            if problem:
                problems.append(f"{_key(h)}: {problem}")
        e = Evidence(
            "hpas",
            f"GET {HPAS}",
            {"hpas": len(items(ev.hpas)), "not_converging": len(problems)},
            conditions=tuple(problems[:10]),
        )
        if not problems:
            return Assessed(e)
        return Assessed(
            e,
            (
                Finding(
                    "warning",
                    "controller-manager",
                    f"{len(problems)} HorizontalPodAutoscaler(s) do not converge ({problems[0]})",
                    "the HPA controller cannot read metrics (metrics-server), cannot scale its target, or its target "
                    "does "
                    "not follow the desired replicas",
                    (e,),
                    (
                        "kubectl describe hpa: the conditions AbleToScale/ScalingActive and the events",
                        "kubectl top pods: do resource metrics exist? (metrics-server in kube-system)",
                    ),
                ),
            ),
        )


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
    if meta.get("deletionTimestamp"):
        return ""  # on its way out (its namespace deleted): its pods go first, nothing is to converge
    generation, observed = int(meta.get("generation") or 0), int(status.get("observedGeneration") or 0)
    since_change = age(_newest_time(d), now)
    if observed < generation and (since_change is None or since_change > after):
        return f"generation {generation} not observed (observed {observed})"
    progressing = _condition(d, "Progressing")
    if progressing.get("status") == "False" and progressing.get("reason") == "ProgressDeadlineExceeded":
        return f"ProgressDeadlineExceeded: {progressing.get('message', '')}"
    wanted = int(spec.get("replicas", 1))
    have = int(status.get("updatedReplicas") or 0), int(status.get("availableReplicas") or 0)
    # since the last progress or the last loss of availability: a pod that just went is not a stall of minutes
    stalled = min(
        (
            a
            for a in (
                age(progressing.get("lastUpdateTime"), now),
                age(_condition(d, "Available").get("lastTransitionTime"), now),
            )
            if a is not None
        ),
        default=None,
    )
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
