"""A scheduling backlog: every pod of a selector, from creation to bound to a node, and how fast the scheduler
drained them (backlog_tracker.py). Pods on simulated nodes (kwok) make a backlog of hundreds cost the host nothing.

Both ends are our watch's stamps, as precise as the watch delay measured over the run.
"""

from __future__ import annotations

import threading
import time

from pydantic import Field

from chaoskit.figures import seconds
from chaoskit.measurements.backlog_tracker import BacklogTracker
from chaoskit.measurements.base import Measurement, register
from chaoskit.measurements.watch import Obj, WatchDelaySampler, Watcher
from chaoskit.model.params import FaultParams, params_of
from chaoskit.model.timeline import MeasurementResult, Sample
from chaoskit.seams.kube import Kube

TYPE = "scheduling_backlog"


class BacklogParams(FaultParams):
    namespace: str = Field(default="", description="Namespace of the pods (default: the playbook's).")
    selector: str = Field(default="", description="Label selector of the pods (default: every pod there).")


@register
class SchedulingBacklog(Measurement):
    """Each pod's wait for the scheduler, the most pods waiting at once, and the drain: pods bound a second after
    the scheduler came back, and how long the last pod waited."""

    name = TYPE
    Params = BacklogParams

    def start(self) -> None:
        p = params_of(self.params, BacklogParams)
        self.result = MeasurementResult(self.label, TYPE, time.time())
        self.tracker, self.lock, self.stop_event = BacklogTracker(), threading.Lock(), threading.Event()
        query = {"labelSelector": p.selector} if p.selector else {}
        ns = p.namespace or self.namespace
        self.watcher = Watcher(self.env.kube, f"/api/v1/namespaces/{ns}/pods", self._pod, self.stop_event, **query)
        self.watcher.start()
        self.watcher.wait_listed(30)
        self.watch_delay = WatchDelaySampler(self.env.kube).start()  # last: a failed start leaves none running

    def _pod(self, kind: str, obj: Obj, at: float) -> None:
        if kind == "LISTED" and obj.get("spec", {}).get("nodeName"):
            return  # bound before we looked: its wait is not ours to tell
        with self.lock:
            self.tracker.pod(obj, at)

    def stop(self) -> MeasurementResult:
        self.stop_event.set()
        self.watcher.join()
        res = self.result
        self.precision = max(self.watch_delay.finish(res).max, 0.001)
        res.finished_at = time.time()
        with self.lock:
            res.samples = [
                Sample(TYPE, "scheduled", "scheduler", pod, created, bound, self.precision)
                for pod, (created, bound) in sorted(self.tracker.waits().items())
            ]
            res.extra["drain"] = drain = self.tracker.drain()
        res.gaps = list(self.watcher.gaps)
        res.errors += self.watcher.errors
        if drain["rate"] is not None:
            res.notes.append(
                f"{drain['drained']} pods bound in {seconds(drain['drain_s'])} after the longest pause "
                f"({drain['rate']:.0f}/s); at most {drain['peak_waiting']} waited at once; the last waited "
                f"{seconds(drain['last_wait'])}"
            )
        return res


def bound_pods(kube: Kube, namespace: str, selector: str) -> tuple[int, int]:
    """(pods of the selector, of which bound to a node) as the API has them now."""
    pods = kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=selector)["items"]
    return len(pods), sum(1 for p in pods if p["spec"].get("nodeName"))
