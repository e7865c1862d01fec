"""Controller manager diagnosis: is it there and leading, does each controller inside it work, are its work queues
moving, do the objects it reconciles converge, does a quota refuse their pods.

A deadlocked or frozen controller manager keeps its port open for a while but stops renewing its leader lease, and then
nothing converges: the document's example is an HPA scale-up after which the pod count never settles. So the lease age
and the objects' own convergence (observedGeneration, replicas, HPA conditions) are the evidence. One controller can
also stop while the process stays up, leading and healthy: its work queue fills and nothing takes from it, or it is not
running at all (chaoskit.components.controller_manager judges it, chaoskit.diagnosers.kit.controllers names it). A full
ResourceQuota stops a scale-out with every controller working (chaoskit.diagnosers.kit.quotas).
"""

from __future__ import annotations

from chaoskit.components import controller_manager
from chaoskit.components.common import flags_of
from chaoskit.components.controller_manager.controllers import missing_controllers
from chaoskit.components.controller_manager.workqueues import (
    DEPTH,
    UNFINISHED,
    backed_up,
    depths,
    stuck_queues,
    working_long,
)
from chaoskit.components.leases import LeaseState
from chaoskit.components.node_lifecycle import grace_period
from chaoskit.components.rbac import CLUSTERROLEBINDINGS, CLUSTERROLES
from chaoskit.diagnosers.controller_manager.convergence import deployments, hpas
from chaoskit.diagnosers.controller_manager.evidence import (
    DEPLOYMENTS,
    HEALTHZ,
    HPAS,
    LEASE,
    METRICS,
    METRICS_URL,
    NAMESPACES,
    NODE_LEASES,
    NODES,
    REPLICASETS,
    SERVICEACCOUNTS,
    SERVICES,
    SLICES,
    ControllerManagerEvidence,
    ControllerManagerParams,
)
from chaoskit.diagnosers.controller_manager.permissions import permissions
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    age,
    failing_checks,
    http_command,
    items,
    metrics_of,
    rounded,
    uncollected,
)
from chaoskit.diagnosers.kit.controllers import (
    controllers_evidence,
    lagging_hpas,
    lagging_replicasets,
    namespaces_stuck_terminating,
    namespaces_without_default_account,
    nodes_not_marked_lost,
    services_without_slices,
    stuck_findings,
)
from chaoskit.diagnosers.kit.leases import assess_leader_lease
from chaoskit.diagnosers.kit.sources import Sources, window_wait
from chaoskit.diagnosers.kit.staticpod import ProcessState, assess_process, process_commands
from chaoskit.figures import seconds
from chaoskit.seams.scrape import Metrics, scrape_command


@register
class ControllerManagerDiagnoser(Diagnoser[ControllerManagerEvidence, ControllerManagerParams]):
    """kube-controller-manager: process, /healthz per controller, leader lease, work queues, the controllers'
    permissions, Deployments and HPAs."""

    component = "controller-manager"
    Params = ControllerManagerParams

    def collect(self, src: Sources, node: str) -> ControllerManagerEvidence:
        reads = {  # asked now, answered while the node script runs
            name: src.api.soon(path)
            for name, path in (
                ("lease", LEASE),
                ("deployments", DEPLOYMENTS),
                ("hpas", HPAS),
                ("replicasets", REPLICASETS),
                ("services", SERVICES),
                ("slices", SLICES),
                ("clusterroles", CLUSTERROLES),
                ("clusterrolebindings", CLUSTERROLEBINDINGS),
                ("namespaces", NAMESPACES),
                ("nodes", NODES),
                ("node_leases", NODE_LEASES),
            )
        }
        reads["default_accounts"] = src.api.soon(SERVICEACCOUNTS, fieldSelector="metadata.name=default")
        scrape = scrape_command(METRICS_URL, METRICS, client_cert=True)
        # both work queue scrapes in the one node script, the window running while the API is read
        s = src.sections(
            node,
            {
                "healthz": http_command(HEALTHZ),
                "metrics": scrape,
                "wait": window_wait(self.p.window),
                "metrics_after": scrape,
                "cmdline": controller_manager.CMDLINE,
                **process_commands(controller_manager.PROCESS),
            },
            chains=[("metrics", "wait", "metrics_after")],  # no second scrape when the first got no answer
        )
        metrics = metrics_of(s["metrics"])
        return ControllerManagerEvidence(
            node=node,
            collected_at=src.clock(),
            healthz=HttpAnswer.of(s["healthz"]),
            metrics=metrics,
            process=ProcessState.of(controller_manager.PROCESS, s),
            metrics_after=metrics_of(s["metrics_after"]) if metrics else Metrics.unavailable(metrics.error),
            window_s=self.p.window,
            cmdline=s["cmdline"].text,
            **{name: answer() for name, answer in reads.items()},
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
            permissions(ev),
            deployments(self.p, ev),
            hpas(self.p, ev),
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
            title = f"kube-controller-manager /healthz does not answer on :{controller_manager.PORT}"
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
            f"workqueue_* from {METRICS_URL} twice, {seconds(ev.window_s)} apart; {HEALTHZ}; GET {REPLICASETS}, "
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
            "serviceaccount-controller": namespaces_without_default_account(
                items(ev.namespaces), items(ev.default_accounts), now, self.p.lag_after
            ),
            # only evidence beside a controller found stuck or missing: a namespace still emptying is no finding alone
            "namespace-controller": namespaces_stuck_terminating(items(ev.namespaces), now, self.p.lag_after),
            "node-lifecycle-controller": nodes_not_marked_lost(
                items(ev.nodes), items(ev.node_leases), now, grace_period(ev.cmdline.split()) + self.p.lag_after
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
            if not syncing or (q.controller is not None and lagging.get(q.controller.name))
        ]
        missing = missing_controllers(ev.healthz.body)
        flags = flags_of(ev.cmdline)
        e = controllers_evidence(source, queues, missing, lagging, flags, ev.metrics_after)
        renewed = "lease renewed" + ("" if lease is None or lease.age is None else f" {seconds(lease.age)} ago")
        return Assessed(e, tuple(stuck_findings(queues, missing, lagging, flags, ev.window_s, renewed, e)))

    def _workqueues(self, ev: ControllerManagerEvidence) -> Assessed:
        m = ev.metrics
        source = f"{DEPTH}, {UNFINISHED} from {METRICS_URL}"
        if not m:
            return Assessed(Evidence("workqueues", source, {"error": m.error}, available=False))
        depth = depths(m)
        deep = backed_up(m, self.p.max_queue_depth)
        stuck = working_long(m, self.p.max_unfinished_work)
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
                    f"{', '.join(f'{q} ({seconds(s)})' for q, s in stuck.items())}",
                    "a controller's worker is stuck on one item (a deadlock or a call that never returns)",
                    (e,),
                    (
                        "dump kube-controller-manager's goroutines (/debug/pprof/goroutine?debug=2 with profiling on)",
                        "restart kube-controller-manager (move its manifest out and back)",
                    ),
                )
            )
        return Assessed(e, tuple(findings))
