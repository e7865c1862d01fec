"""The controller manager's catch-up after an outage, at a size: N Deployments of simulated pods (kwok) are scaled
while it is away, and each is timed from its return (the leader Lease's acquireTime) to synced, pods created and
Ready (resync_tracker.py judges).

The measurement makes the Deployments itself (one pod each, on simulated nodes only, so N costs the host nothing),
looks at the Lease every second, and scales every one of them to `replicas` as soon as the leader is seen gone.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from pydantic import Field

from chaoskit import workloads
from chaoskit.components import controller_manager
from chaoskit.errors import ToolError
from chaoskit.figures import seconds
from chaoskit.measurements.base import Measurement, register
from chaoskit.measurements.observed import Observers
from chaoskit.measurements.resync_tracker import STAGES, TYPE, ResyncTracker
from chaoskit.measurements.watch import Obj, WatchDelaySampler, Watcher
from chaoskit.model.duration import PositiveDuration
from chaoskit.model.params import FaultParams, params_of
from chaoskit.model.timeline import MeasurementResult, Sample

LABEL = "chaoskit.dev/resync"
READY_TIMEOUT = 180.0  # N Deployments of simulated pods: created, scheduled and reported Ready by kwok
# who moves each stage: the deployment controller, the ReplicaSet controller, then the scheduler (a simulated node's
# pod is Ready as soon as it is bound)
COMPONENTS = {"deployment_synced": "controller-manager", "replicas_created": "controller-manager", "ready": "scheduler"}
WRITERS = 8  # concurrent creates and scales: the API server takes them faster than one client in a row


class ResyncParams(FaultParams):
    deployments: int = Field(default=100, ge=1, le=2000, description="Deployments of simulated pods to make.")
    replicas: int = Field(default=2, ge=2, le=10, description="Replicas each is scaled to while the leader is away.")
    settle: PositiveDuration = Field(
        default=240.0, description="Seconds the measurement waits at its end for every Deployment to be Ready."
    )


@register
class ControllerResync(Measurement):
    """Deployments scaled while the controller manager is away: from its return to each synced, its pods created and
    Ready; the last one and Deployments Ready a second."""

    name = TYPE
    Params = ResyncParams

    def start(self) -> None:
        self.p = params_of(self.params, ResyncParams)
        kube, ns = self.env.kube, self.namespace
        self.result = MeasurementResult(self.label, TYPE, time.time())
        self.names = [f"resync-{i}" for i in range(self.p.deployments)]
        self.path = f"/apis/apps/v1/namespaces/{ns}/deployments"
        self.say(f"{self.p.deployments} Deployments of simulated pods in {ns}")
        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(lambda name: kube.apply(self._deployment(name)), self.names))
        kube.wait(f"{self.p.deployments} Deployments available in {ns}", self._available, READY_TIMEOUT, 2.0)
        self.tracker = ResyncTracker()
        self.seen = o = Observers()
        o.watchers = [Watcher(kube, self.path, o.locked(self._deployment_seen), o.stop_event, labelSelector=LABEL)]
        o.start()
        self.thread = threading.Thread(target=self._watch_lease, name="resync-lease", daemon=True)
        self.thread.start()
        self.watch_delay = WatchDelaySampler(kube).start()  # last: a failed start leaves none running

    def _deployment(self, name: str) -> Obj:
        obj = workloads.simulated_pods(self.namespace, name, 1)
        obj["metadata"]["labels"][LABEL] = "true"
        return obj

    def _available(self) -> bool:
        items = self.env.kube.get(self.path, labelSelector=LABEL)
        available = sum(1 for d in items["items"] if (d.get("status") or {}).get("availableReplicas") == 1)
        return available == len(self.names)

    def _deployment_seen(self, kind: str, obj: Obj, at: float) -> None:
        if kind != "DELETED":
            self.tracker.deployment(obj, at)

    def _watch_lease(self) -> None:
        """Every second the leader Lease; once it is stale, every Deployment scaled (once)."""
        while not self.seen.stop_event.wait(1.0):
            try:
                lease = self.env.kube.get(controller_manager.LEASE)
            except ToolError:
                continue  # the API server away too: the next look
            with self.seen.lock:
                self.tracker.lease(lease, time.time())
                scale = self.tracker.gone and self.tracker.scaled_at is None
            if scale:
                self._scale()

    def _scale(self) -> None:
        body = {"spec": {"replicas": self.p.replicas}}
        with ThreadPoolExecutor(WRITERS) as pool:
            done = list(pool.map(lambda n: self.env.kube.patch(f"{self.path}/{n}", body), self.names))
        generations = {d["metadata"]["name"]: int(d["metadata"]["generation"]) for d in done}
        with self.seen.lock:
            self.tracker.scaled(generations, self.p.replicas, time.time())
        self.say(f"controller manager away: {len(done)} Deployments scaled to {self.p.replicas}")

    def stop(self) -> MeasurementResult:
        t = self.tracker
        if t.gone:  # its catch-up on the way: wait for the last Deployment
            self.seen.settle(t.waiting, self.p.settle)
        self.seen.stop()
        self.thread.join()
        res = self.result
        self.precision = max(self.watch_delay.finish(res).max, 0.001)
        res.finished_at = time.time()
        res.gaps = self.seen.gaps
        res.extra["resync"] = summary = t.summary()
        if not t.gone:
            res.notes.append("the controller manager never lost its lease while measured: nothing to catch up")
            return res
        if t.leads_at is None:
            res.errors.append("no leader took the controller manager's lease again")
            return res
        for name, reached in t.stages().items():
            start = t.leads_at  # each stage from the end of the one before: which component spent the time
            for stage in STAGES:
                if stage in reached:
                    end = t.leads_at + reached[stage]
                    res.samples.append(Sample(TYPE, stage, COMPONENTS[stage], name, start, end, self.precision))
                    start = end
        if t.scaled_at is not None and t.scaled_at > t.leads_at:
            res.errors.append("scaled only after the controller manager led again: hold the fault longer")
        if summary["ready"] < summary["deployments"]:
            late = summary["deployments"] - summary["ready"]
            res.errors.append(f"{late} Deployments not Ready {seconds(self.p.settle)} on")
        if summary["before_leader"]:
            res.errors.append(f"reconciled before a leader was back: {', '.join(summary['before_leader'][:5])}")
        if summary["last_ready_s"] is not None:
            res.notes.append(
                f"{summary['ready']} Deployments caught up, the last {seconds(summary['last_ready_s'])} after the "
                f"controller manager led again ({summary['ready_per_s']:.1f}/s); it was away "
                f"{seconds(t.leads_at - (t.gone_at or t.leads_at))} after we saw its lease stale"
            )
        return res
