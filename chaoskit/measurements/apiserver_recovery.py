"""The API server's way back after an outage, at the size of the cluster: when it answers again, when every client
watches again, when every node's heartbeat is renewed and every node Ready, and how hard the clients' re-lists hit it
meanwhile (apiserver_recovery_tracker.py judges the looks).

A poller looks every `interval` seconds; a look is /readyz, the API server's own /metrics, the node Leases and the
Nodes (both served from its watch cache). With kwok's simulated nodes a thousand heartbeats and their watches meet
the restarted API server, as a large cluster's would.
"""

from __future__ import annotations

import threading
import time

from pydantic import Field

from chaoskit.components import apiserver
from chaoskit.errors import ToolError
from chaoskit.figures import seconds
from chaoskit.measurements.apiserver_recovery_tracker import STAGES, TYPE, Look, RecoveryTracker
from chaoskit.measurements.base import Measurement, register
from chaoskit.model.duration import PositiveDuration
from chaoskit.model.params import FaultParams, params_of
from chaoskit.model.timeline import MeasurementResult, Sample, api_time
from chaoskit.seams.kube import Kube, condition
from chaoskit.seams.scrape import Labels, Metrics

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
# one row each in a report's timeline: what is back at the end of the stage
SUBJECTS = {
    "api_back": "answering",
    "watches_back": "every client watching",
    "leases_renewed": "every heartbeat renewed",
    "nodes_ready": "every node Ready",
}
LOOK_TIMEOUT = (2.0, 10.0)  # a hung API server is a failed look, not a stuck poller
# the watches to come back to are a settled cluster's: an earlier playbook's namespace still terminating counts
# watches (its pods' ConfigMaps, in the kubelets) that go with it and never come back
SETTLED_WAIT_S = 120.0


class RecoveryParams(FaultParams):
    interval: PositiveDuration = Field(default=2.0, description="Seconds between two looks at the API server.")
    settle: PositiveDuration = Field(
        default=300.0,
        description="Seconds the measurement waits at its end for the cluster to be steady again after an outage.",
    )
    watches: float = Field(
        default=0.95,
        gt=0,
        le=1,
        description="Share of the watches open before the outage that must be open again for the clients to count "
        "as back.",
    )


def _single(labels: Labels) -> bool:
    return labels.get("verb") in apiserver.SINGLE_OBJECT_VERBS


def look(kube: Kube) -> Look:
    """One look at the API server; a failed /readyz is a look that says so."""
    at = time.time()
    try:
        ready = kube.raw("/readyz").strip() == "ok"
        metrics = Metrics.parse(kube.raw("/metrics"))
        leases = kube.get(LEASES, resourceVersion="0")["items"]
        nodes = kube.get("/api/v1/nodes", resourceVersion="0")["items"]
    except ToolError as exc:
        return Look(at, False, error=str(exc)[:200])
    renewed = {
        lease["metadata"]["name"]: t
        for lease in leases
        if (t := api_time(lease.get("spec", {}).get("renewTime"))) is not None
    }
    ready_nodes = sum(1 for n in nodes if condition(n, "Ready"))
    return Look(
        at,
        ready,
        watches=metrics.total(apiserver.OPEN_REQUESTS, verb="WATCH"),
        lists=metrics.total(apiserver.REQUESTS, verb="LIST"),
        single=metrics.histogram(apiserver.REQUEST_SLI, _single),
        renewed=renewed,
        nodes=len(nodes),
        ready_nodes=ready_nodes,
    )


def terminating(kube: Kube) -> list[str]:
    """The namespaces being deleted now."""
    items = kube.get("/api/v1/namespaces")["items"]
    return [n["metadata"]["name"] for n in items if (n.get("status") or {}).get("phase") == "Terminating"]


def settled(kube: Kube, within: float, interval: float = 1.0) -> float:
    """Wait until no namespace is terminating (at most `within` seconds); how long it waited."""
    t0 = time.monotonic()
    while terminating(kube) and time.monotonic() - t0 < within:
        time.sleep(interval)
    return time.monotonic() - t0 if time.monotonic() - t0 >= interval else 0.0


@register
class ApiserverRecovery(Measurement):
    """After an API server outage: back, every client watching again, every heartbeat renewed, every node Ready;
    the re-list storm's LIST rate and the single-object p99 per window."""

    name = TYPE
    Params = RecoveryParams

    def start(self) -> None:
        self.p = params_of(self.params, RecoveryParams)
        self.kube = self.env.kube.bounded(LOOK_TIMEOUT)
        self.result = MeasurementResult(self.label, TYPE, time.time())
        self.tracker, self.lock, self.stop_event = RecoveryTracker(self.p.watches), threading.Lock(), threading.Event()
        if waited := settled(self.kube, SETTLED_WAIT_S):
            self.result.notes.append(f"waited {seconds(waited)} for terminating namespaces to go before the baseline")
        # two looks before any fault: the open watches to come back to, and one window of the steady LIST rate
        for i in range(2):
            if i:
                time.sleep(self.p.interval)
            before = look(self.kube)
            if not before.ready:
                raise ToolError(f"the API server is not ready before the fault: {before.error}")
            self.tracker.look(before)
        self.thread = threading.Thread(target=self._poll, name="apiserver-recovery", daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stop_event.wait(self.p.interval):
            seen = look(self.kube)
            with self.lock:
                self.tracker.look(seen)

    def _steady(self) -> bool:
        with self.lock:
            return self.tracker.down is None or self.tracker.steady()

    def stop(self) -> MeasurementResult:
        deadline = time.monotonic() + self.p.settle
        while not self._steady() and time.monotonic() < deadline:
            time.sleep(self.p.interval)
        self.stop_event.set()
        self.thread.join()
        res, t = self.result, self.tracker
        res.finished_at = time.time()
        down, reached, back = t.down, t.reached(), t.back()
        base = t.baseline
        res.extra["baseline"] = None if base is None else {"watches": base.watches, "nodes": base.nodes}
        res.extra["windows"] = t.windows()
        res.extra["reached"] = {k: None if r is None else r.at for k, r in reached.items()}
        if down is None:
            res.notes.append("the API server never stopped answering while measured")
            return res
        if back is None:
            res.errors.append(f"the API server was not back within {seconds(self.p.settle)} of the end")
            return res
        for stage in STAGES:
            r = reached[stage]
            if r is None:
                res.errors.append(f"{stage} not reached within {seconds(self.p.settle)} of the end")
                continue
            # after back, a stage's start is as late as back's bracket and its end as its own
            first = stage == "api_back"
            start, precision = (down.at, r.precision) if first else (back.at, r.precision + back.precision)
            res.samples.append(Sample(TYPE, stage, "apiserver", SUBJECTS[stage], start, r.at, precision))
        peak = max((w["lists_per_s"] or 0.0 for w in res.extra["windows"]), default=0.0)
        res.notes.append(
            f"{base.nodes if base else 0} nodes; back {seconds(back.at - down.at)} after the first failed look; "
            + ", ".join(f"{s} +{seconds(r.at - back.at)}" for s in STAGES[1:] if (r := reached[s]) is not None)
            + f"; LIST calls peaked at {peak:.0f}/s"
        )
        return res
