"""HPA-to-Ready: for every scale-up, the critical path from "metric above target" to "first request answered by
the new pod through the Service, from each node", cut into stages each owned by one component (HPA_STAGES).

Where each timestamp comes from, and so its precision:
- metric above target: the metrics API sample's own timestamp (1 s), also when our poll reads that sample only
  after the HPA acted on it; or, for a scale-up forced by raising minReplicas, when we saw that spec change (ms);
- HPA decision (its write of the Deployment's or StatefulSet's scale; its status follows later), ReplicaSet scaled
  (a Deployment's only: a StatefulSet creates its pods itself), Pod created /
  scheduled / containers running / Ready, ready in the EndpointSlice: when our watch received the change (ms);
  after a watch gap, the objects' own timestamps (1 s);
- rules programmed and first request: the in-node probe (probe.py), whose loops pause 100 ms between rounds that
  take their own time too; each sample carries the spacing measured between the round that last saw the old state
  and the one that first saw the new (the rules read without the pod's IP and the one with it; the request round
  before the pod's first answer and that answer).
A stage whose end was seen before its start (watch events out of order, the probe ahead of our watch, a pod's IP
still in the rules from an earlier pod) reads 0 and is named in the result's notes.
"""

from __future__ import annotations

import threading
import time

from chaoskit.components.table import DATAPLANE
from chaoskit.errors import ToolError
from chaoskit.figures import seconds
from chaoskit.measurements.base import Measurement, MissingPiece, TargetParams, must_get, register
from chaoskit.measurements.hpa_tracker import TYPE, HpaTracker
from chaoskit.measurements.observed import Observers
from chaoskit.measurements.probe import NodeProbe, probe_script
from chaoskit.measurements.watch import Obj, WatchDelaySampler, Watcher
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.model.timeline import Gap, MeasurementResult, api_time
from chaoskit.seams.nodeexec import api_nodes
from chaoskit.subject import PLURAL

SETTLE = 60.0  # how long stop() waits for pods of a scale-up still on their way to their first request
METRICS_POLL = 2.0  # metrics-server refreshes every 15 s; 2 s polls catch each new sample's own timestamp


def cpu_cores(quantity: str) -> float:
    if quantity.endswith("n"):
        return float(quantity[:-1]) / 1e9
    if quantity.endswith("u"):
        return float(quantity[:-1]) / 1e6
    if quantity.endswith("m"):
        return float(quantity[:-1]) / 1e3
    return float(quantity)


@register
class HpaScaleUp(Measurement):
    """HPA-to-Ready per scale-up, stage by stage, each stage owned by one component."""

    name = TYPE
    every_node = DATAPLANE
    Params = TargetParams

    def start(self) -> None:
        p = self.params if isinstance(self.params, TargetParams) else TargetParams()
        kube, ns = self.env.kube, self.namespace
        self.result = MeasurementResult(self.label, TYPE, time.time())
        self.tracker = HpaTracker(self.result.started_at, time.time, answers_name_the_pod=p.first_request)
        self.seen = Observers()
        self.stop_event, self.lock = self.seen.stop_event, self.seen.lock  # the metrics poll's too
        hpa_name = p.hpa or p.deployment
        hpa = must_get(kube, f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/{hpa_name}", "HPA")
        plural = PLURAL[p.kind]
        deploy = must_get(kube, f"/apis/apps/v1/namespaces/{ns}/{plural}/{p.deployment}", p.kind)
        svc = must_get(kube, f"/api/v1/namespaces/{ns}/services/{p.service}", "Service")
        try:
            kube.get("/apis/metrics.k8s.io/v1beta1/nodes")
        except ToolError as exc:
            raise MissingPiece(f"the metrics API (metrics-server) is not answering, no HPA can scale: {exc}") from exc
        self.tracker.hpa("LISTED", hpa, time.time())
        self.tracker.deployment("LISTED", deploy, time.time())
        selector = ",".join(f"{k}={v}" for k, v in deploy["spec"]["selector"]["matchLabels"].items())
        self.request_cores = _requested_cores(deploy)
        self.selector = selector
        self.seen.watchers = self._watchers(p, hpa_name, plural, selector)
        # a probe per node that has a dataplane: a simulated node runs no kube-proxy and nothing to exec into
        real = kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR)["items"]
        self.real = api_nodes(real)
        self.nodes: list[str] = [n.name for n in self.real]
        port = svc["spec"]["ports"][0]
        script = probe_script(
            ns,
            p.service,
            svc["spec"]["clusterIP"],
            int(port["port"]),
            requests=p.first_request,
            port_name=port.get("name", ""),
        )
        seen = self.seen.locked_one(self.tracker.seen)
        self.seen.probes = [NodeProbe(self.env.nodes, n, script, seen) for n in self.real]
        self.metrics_gaps: list[Gap] = []
        self.poller = threading.Thread(target=self._poll_metrics, name="metrics poll", daemon=True)
        self.poller.start()
        self.seen.start()
        self.watch_delay = WatchDelaySampler(kube).start()  # last: a failed start leaves none running

    def _watchers(self, p: TargetParams, hpa_name: str, plural: str, selector: str) -> list[Watcher]:
        """One watch per object the HPA-to-Ready path passes through: HPA, workload, ReplicaSets, pods, slices."""
        kube, ns, stop = self.env.kube, self.namespace, self.stop_event
        base = f"/namespaces/{ns}"
        on = self.seen.locked
        t = self.tracker
        return [
            Watcher(
                kube,
                f"/apis/autoscaling/v2{base}/horizontalpodautoscalers",
                on(t.hpa),
                stop,
                fieldSelector=f"metadata.name={hpa_name}",
            ),
            Watcher(
                kube,
                f"/apis/apps/v1{base}/{plural}",
                on(t.deployment),
                stop,
                fieldSelector=f"metadata.name={p.deployment}",
            ),
            Watcher(kube, f"/apis/apps/v1{base}/replicasets", on(t.replicaset), stop, labelSelector=selector),
            Watcher(kube, f"/api/v1{base}/pods", on(t.pod), stop, labelSelector=selector),
            Watcher(
                kube,
                f"/apis/discovery.k8s.io/v1{base}/endpointslices",
                on(t.endpoint_slice),
                stop,
                labelSelector=f"kubernetes.io/service-name={p.service}",
            ),
        ]

    def _poll_metrics(self) -> None:
        path = f"/apis/metrics.k8s.io/v1beta1/namespaces/{self.namespace}/pods"
        last_stamp, down_since = 0.0, None
        while not self.stop_event.wait(METRICS_POLL):
            try:
                items = self.env.kube.get(path, labelSelector=self.selector).get("items", [])
            except ToolError as exc:
                down_since = down_since or (time.time(), f"metrics API: {exc}"[:300])
                continue
            if down_since is not None:
                self.metrics_gaps.append(Gap(down_since[0], time.time(), down_since[1]))
                down_since = None
            stamps = [api_time(i.get("timestamp")) or 0.0 for i in items]
            if not items or max(stamps) <= last_stamp or not self.request_cores:
                continue
            last_stamp = max(stamps)
            used = [sum(cpu_cores(c["usage"]["cpu"]) for c in i.get("containers", [])) for i in items]
            utilization = 100.0 * sum(used) / (len(used) * self.request_cores)
            with self.lock:
                self.tracker.metric(last_stamp, utilization)

    def stop(self) -> MeasurementResult:
        # let a scale-up caught mid-way reach the end of its path
        settled, in_flight = self.seen.settle(lambda: self.tracker.in_flight(self.nodes), SETTLE)
        self.seen.stop()
        self.poller.join(timeout=METRICS_POLL + 5)
        res = self.result
        self.tracker.watch_precision = self.watch_delay.finish(res).max
        res.finished_at = time.time()
        with self.lock:
            res.samples = self.tracker.samples(self.nodes)
            ups = self.tracker.scale_ups
            res.notes += [f"scale-up {u.run}: {u.from_replicas} → {u.to_replicas} replicas" for u in ups]
            res.notes += self.tracker.incomplete()
            res.notes += self.tracker.clamped(self.nodes)
        if settled >= 1:
            left = f"; {in_flight} still on its way" if in_flight else ""
            res.notes.append(f"stopping waited {seconds(settled)} for pods of a scale-up to reach their end{left}")
        res.gaps = self.seen.gaps + self.metrics_gaps
        res.notes += [f"the HPA said {said}" for said in self.tracker.hpa_said]  # why a scale-up did not start
        if not self.tracker.scale_ups:
            res.notes.append("the HPA did not scale up while measuring: no samples")
        return res


def _requested_cores(deploy: Obj) -> float:
    containers = deploy["spec"]["template"]["spec"]["containers"]
    return sum(cpu_cores(c.get("resources", {}).get("requests", {}).get("cpu", "0")) for c in containers)
