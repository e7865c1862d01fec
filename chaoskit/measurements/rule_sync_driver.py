"""The active side of the rule-sync measurement, for `chaoskit measure rule-sync`, the e2e tests and the benchmark:
a workload of its own (no HPA) in a namespace of its own, endpoint changes made one at a time, each waited for until
every node converged, so each change's figures stand alone and kube-proxy's SLI can be read between changes.

The times themselves are the measurement's (rule_sync.py); this module only decides when to act.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chaoskit import workloads
from chaoskit.env import Env
from chaoskit.errors import ToolError, UsageError
from chaoskit.figures import seconds
from chaoskit.measurements.rule_sync import RuleSync, RuleSyncParams
from chaoskit.model.timeline import MeasurementResult
from chaoskit.seams.kube import Kube, condition
from chaoskit.seams.poll import poll

CHANGES: tuple[str, ...] = ("scale-up", "scale-down", "pod-deleted")
STEP = {"scale-up": 1, "scale-down": -1, "pod-deleted": 0}
MIN_REPLICAS = 2  # always a ready endpoint left: kube-proxy never falls back to terminating ones mid-measurement
BASE_REPLICAS = 3
READY_TIMEOUT = 180.0  # pods of a fresh namespace: scheduling and start on a busy 2-CPU host
CONVERGE_TIMEOUT = 60.0
READY_AFTER = 1  # seconds from a pod's start to Ready: see Workload.deploy
SETTLE = 1.5  # after convergence: the change's last slice update (the old endpoint dropped) reaches kube-proxy's SLI
POLL = 0.25
CLEANUP_TIMEOUT = 300.0  # an API server restarted by someone else's fault is back within minutes


def parse_changes(text: str) -> tuple[str, ...]:
    names = tuple(c.strip() for c in text.split(",") if c.strip())
    unknown = [c for c in names if c not in CHANGES]
    if unknown or not names:
        raise UsageError(f"unknown endpoint change {', '.join(unknown) or '(none)'}; use {', '.join(CHANGES)}")
    return names


def initial_replicas(changes: Sequence[str]) -> int:
    """Replicas to start with so that no change in the sequence goes below MIN_REPLICAS."""
    offset = lowest = 0
    for change in changes:
        offset += STEP[change]
        lowest = min(lowest, offset)
    return max(BASE_REPLICAS, MIN_REPLICAS - lowest)


@dataclass
class Workload:
    """chaoskit's web Deployment and Service in a namespace the driver owns (created, and deleted at the end)."""

    kube: Kube
    namespace: str
    replicas: int = BASE_REPLICAS
    name: str = "web"
    session_affinity: bool = False  # the Service keeps each client on its pod (sessionAffinity ClientIP)

    def deploy(self, timeout: float = READY_TIMEOUT) -> None:
        self.kube.apply(workloads.namespace(self.namespace))
        # Ready a second after start: the EndpointSlice controller stamps a pod's Ready transition (1 s precision)
        # only when it is later than the not-ready one it last saw, so a pod ready within the same second would give
        # its endpoint no trigger time and kube-proxy's SLI no observation to compare ours with
        self.kube.apply(
            workloads.web_deployment(self.namespace, self.name, replicas=self.replicas, ready_after=READY_AFTER)
        )
        self.kube.apply(workloads.service(self.namespace, self.name, session_affinity=self.session_affinity))
        self.kube.wait(f"{self.replicas} ready pods of {self.namespace}/{self.name}", self.settled, timeout, 1.0)

    def pods(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.kube.get(
            f"/api/v1/namespaces/{self.namespace}/pods", labelSelector=f"app={self.name}"
        )["items"]
        return items

    def settled(self) -> bool:
        """Exactly `replicas` pods, all Ready, none terminating (a deleted pod gone from the API too)."""
        pods = self.pods()
        return len(pods) == self.replicas and all(
            condition(p, "Ready") and not p["metadata"].get("deletionTimestamp") for p in pods
        )

    def change(self, change: str) -> str:
        """Make one endpoint change; returns what was done, in words."""
        if change == "pod-deleted":
            # the oldest: never the pod a scale-up just added, whose removal would undo that change before a node
            # that lags saw it (RFC 3339 times sort as text)
            ready = [p["metadata"] for p in self.pods() if condition(p, "Ready")]
            pods = [m["name"] for m in sorted(ready, key=lambda m: (m.get("creationTimestamp", ""), m["name"]))]
            if not pods:
                raise ToolError(f"no ready pod of {self.namespace}/{self.name} to delete")
            self.kube.delete(f"/api/v1/namespaces/{self.namespace}/pods/{pods[0]}", propagation="Background")
            return f"deleted pod {pods[0]}"
        self.replicas += STEP[change]
        path = f"/apis/apps/v1/namespaces/{self.namespace}/deployments/{self.name}/scale"
        self.kube.patch(path, {"spec": {"replicas": self.replicas}})
        return f"scaled to {self.replicas} replicas"

    def delete(self, timeout: float = CLEANUP_TIMEOUT) -> None:
        """Delete the namespace, waiting out an API server that is briefly away (another run may be restarting it)."""
        path = f"/api/v1/namespaces/{self.namespace}"
        self.kube.wait(
            f"namespace {self.namespace} deleted", lambda: self.kube.delete(path, "Background") or True, timeout, 5.0
        )


def wait_converged(m: RuleSync, workload: Workload, changes_before: int, timeout: float) -> bool:
    """Until the change happened (pods settled, a new endpoint set) and every node's rules and traffic followed it."""

    def converged() -> bool:  # a ToolError from settled(): the API server is briefly unavailable, keep waiting
        return (
            workload.settled()
            and len(m.endpoints()) == workload.replicas
            and len(m.changes()) > changes_before
            and m.converged()
        )

    return poll(converged, timeout, POLL).done


def start_measurement(
    env: Env,
    workload: Workload,
    label: str = "rule-sync",
    *,
    services: int = 0,
    endpoints_per_service: int = 1,
    say: Callable[[str], None] = lambda _: None,
) -> RuleSync:
    params = RuleSyncParams(
        namespace=workload.namespace,
        service=workload.name,
        services=services,
        endpoints_per_service=endpoints_per_service,
    )
    m = RuleSync(env, params, label, workload.namespace)
    m.say = say
    time.sleep(SETTLE)  # the last syncs of the deployment land in kube-proxy's SLI before our first scrape
    m.start()
    time.sleep(1.0)  # every node's probe reports its rules once before the first change
    return m


def measure_changes(
    env: Env,
    workload: Workload,
    sequence: Sequence[str],
    *,
    converge_timeout: float = CONVERGE_TIMEOUT,
    say: Callable[[str], None] = lambda _: None,
    services: int = 0,
    endpoints_per_service: int = 1,
) -> MeasurementResult:
    """Measure every change of `sequence` in turn on a deployed workload, each waited for on every node."""
    m = start_measurement(env, workload, services=services, endpoints_per_service=endpoints_per_service, say=say)
    actions: list[dict[str, Any]] = []
    try:
        for i, change in enumerate(sequence, 1):
            before = len(m.changes())
            started = time.time()
            done = workload.change(change)
            ok = wait_converged(m, workload, before, converge_timeout)
            numbers = [c.number for c in m.changes()[before:]]
            say(
                f"{i}/{len(sequence)} {change}: {done}; endpoint changes {numbers}"
                + ("" if ok else f"; NOT converged on every node within {seconds(converge_timeout)}")
            )
            actions.append({"action": change, "done": done, "at": started, "changes": numbers, "converged": ok})
            if not ok:
                break  # the next change would pile onto this one: its figures would mean nothing
            time.sleep(SETTLE)
            m.mark()
    finally:
        result = m.stop()
    result.extra["actions"] = actions
    result.notes += [
        f"{a['action']} ({a['done']}) did not converge within {seconds(converge_timeout)}"
        for a in actions
        if not a["converged"]
    ]
    return result


def run_changes(
    env: Env,
    namespace: str,
    changes: Sequence[str],
    repeat: int = 1,
    *,
    converge_timeout: float = CONVERGE_TIMEOUT,
    say: Callable[[str], None] = lambda _: None,
    session_affinity: bool = False,
    services: int = 0,
    endpoints_per_service: int = 1,
) -> MeasurementResult:
    """Deploy, measure every change in turn (`repeat` times over), stop; the namespace is deleted whatever happens."""
    sequence = [c for _ in range(repeat) for c in changes]
    workload = Workload(env.kube, namespace, initial_replicas(sequence), session_affinity=session_affinity)
    try:
        say(f"deploying {workload.replicas} replicas of {workload.name} in namespace {namespace}")
        workload.deploy()
        return measure_changes(
            env,
            workload,
            sequence,
            converge_timeout=converge_timeout,
            say=say,
            services=services,
            endpoints_per_service=endpoints_per_service,
        )
    finally:
        say(f"deleting namespace {namespace}")
        workload.delete()
