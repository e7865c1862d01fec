"""HPA-to-Ready: for every scale-up, the critical path from "metric above target" to "first request answered by
the new pod through the Service, from each node", cut into stages each owned by one component (HPA_STAGES).

Where each timestamp comes from, and so its precision:
- metric above target: the metrics API sample's own timestamp (1 s); or, for a scale-up forced by raising
  minReplicas, when we saw that spec change (ms);
- HPA decision (its write of the Deployment's scale; its status follows later), ReplicaSet scaled, Pod created /
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

import bisect
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from chaoskit.cluster.kube import condition
from chaoskit.errors import ToolError
from chaoskit.measurements.base import Measurement, MissingPiece, TargetParams, must_get, register
from chaoskit.measurements.probe import AnswerSeen, NodeProbe, Rounds, RulesSeen, Seen, probe_script
from chaoskit.measurements.watch import Obj, Watcher
from chaoskit.model.timeline import (
    API_PRECISION,
    RUN_SUBJECT,
    STAGE_COMPONENTS,
    WATCH_PRECISION,
    Clamp,
    Gap,
    MeasurementResult,
    Sample,
    api_time,
    clamp_notes,
)

TYPE = "hpa_scale_up"
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


@dataclass(frozen=True)
class Stamp:
    at: float
    precision: float


@dataclass
class ScaleUp:
    run: int
    decided: Stamp  # the HPA wrote the new desiredReplicas
    from_replicas: int
    to_replicas: int
    trigger: Stamp | None = None  # metric above target, or minReplicas raised
    rs_scaled: Stamp | None = None


@dataclass
class PodTimes:
    name: str
    run: int
    created: Stamp
    scheduled: Stamp | None = None
    started: Stamp | None = None
    ready: Stamp | None = None
    endpoint: Stamp | None = None
    ip: str = ""
    node: str = ""


@dataclass
class HpaTracker:
    """Pure: fed with what the watches, the metrics poll and the probes saw; turns it into stage samples."""

    started_at: float
    target_utilization: float | None = None
    replicas: int | None = None  # the Deployment's spec.replicas, as the HPA last set it
    last_scale_time: float | None = None
    early_rs: Stamp | None = None  # a ReplicaSet scale-up seen before the Deployment change that caused it
    min_replicas: int | None = None
    rs_replicas: dict[str, int] = field(default_factory=dict)
    scale_ups: list[ScaleUp] = field(default_factory=list)
    pods: dict[str, PodTimes] = field(default_factory=dict)
    known_pods: set[str] = field(default_factory=set)  # there before we started: not part of any scale-up
    deleted: set[str] = field(default_factory=set)
    above_since: Stamp | None = None  # the first metric sample above target since the last decision
    forced_at: Stamp | None = None  # minReplicas raised since the last decision
    rules: dict[str, list[RulesSeen]] = field(default_factory=dict)  # node -> every change of its rules, by time
    answers: dict[tuple[str, str], float] = field(default_factory=dict)  # (pod, node) -> first answer
    rounds: dict[str, Rounds] = field(default_factory=dict)  # node -> its request rounds

    def hpa(self, kind: str, obj: Obj, at: float) -> None:
        spec, status = obj.get("spec", {}), obj.get("status", {})
        self.last_scale_time = api_time(status.get("lastScaleTime")) or self.last_scale_time
        for metric in spec.get("metrics", []):
            target = metric.get("resource", {}).get("target", {})
            if target.get("averageUtilization") is not None:
                self.target_utilization = float(target["averageUtilization"])
        min_replicas = int(spec.get("minReplicas", 1))
        if self.min_replicas is not None and min_replicas > self.min_replicas and kind != "LISTED":
            self.forced_at = self.forced_at or Stamp(at, WATCH_PRECISION)
        self.min_replicas = min_replicas

    def deployment(self, kind: str, obj: Obj, at: float) -> None:
        """The HPA's decision lands as a write of the Deployment's scale: spec.replicas raised."""
        replicas = int(obj.get("spec", {}).get("replicas") or 0)
        before, self.replicas = self.replicas, replicas
        if before is None or replicas <= before:
            return
        stamp = Stamp(at, WATCH_PRECISION)
        if kind == "LISTED":  # seen only after a watch gap: the HPA's own record of it
            stamp = Stamp(self.last_scale_time or at, API_PRECISION)
        causes = [c for c in (self.above_since, self.forced_at) if c is not None]
        trigger = min(causes, key=lambda c: c.at) if causes else None
        up = ScaleUp(len(self.scale_ups) + 1, stamp, before, replicas, trigger)
        if self.early_rs is not None and self.early_rs.at >= stamp.at - 2.0:
            up.rs_scaled = self.early_rs  # its watch event overtook the Deployment's
        self.early_rs = None
        self.scale_ups.append(up)
        self.above_since = self.forced_at = None

    def metric(self, sampled_at: float, utilization: float) -> None:
        """A metrics API sample (its own timestamp) of the pods' average CPU utilization, in percent."""
        if self.target_utilization is None:
            return
        if utilization > self.target_utilization:
            if self.above_since is None:
                self.above_since = Stamp(sampled_at, API_PRECISION)
        else:
            self.above_since = None

    def replicaset(self, kind: str, obj: Obj, at: float) -> None:
        name, replicas = obj["metadata"]["name"], int(obj.get("spec", {}).get("replicas") or 0)
        before = self.rs_replicas.get(name)
        self.rs_replicas[name] = replicas
        if before is None or replicas <= before:
            return
        stamp = Stamp(at, WATCH_PRECISION if kind != "LISTED" else API_PRECISION)
        for up in reversed(self.scale_ups):
            if up.rs_scaled is None:
                up.rs_scaled = stamp
                return
        self.early_rs = stamp

    def pod(self, kind: str, obj: Obj, at: float) -> None:
        meta, spec, status = obj["metadata"], obj.get("spec", {}), obj.get("status", {})
        name = meta["name"]
        if kind == "DELETED":
            self.deleted.add(name)
            return
        if name in self.known_pods:
            return
        listed = kind == "LISTED"
        times = self.pods.get(name)
        if times is None:
            created_at = api_time(meta.get("creationTimestamp")) or at
            if listed and created_at < self.started_at:
                self.known_pods.add(name)
                return
            created = Stamp(created_at, API_PRECISION) if listed else Stamp(at, WATCH_PRECISION)
            times = self.pods[name] = PodTimes(name, self._run_of(created.at), created)
        seen = Stamp(at, WATCH_PRECISION)
        if times.scheduled is None and spec.get("nodeName"):
            times.scheduled = self._api_stamp(obj, "PodScheduled") if listed else seen
            times.node = spec["nodeName"]
        containers = status.get("containerStatuses") or []
        if times.started is None and containers and all("running" in c.get("state", {}) for c in containers):
            started = max(api_time(c["state"]["running"].get("startedAt")) or at for c in containers)
            times.started = Stamp(started, API_PRECISION) if listed else seen
        if times.ready is None and condition(obj, "Ready"):
            times.ready = self._api_stamp(obj, "Ready") if listed else seen
        times.ip = status.get("podIP") or times.ip

    @staticmethod
    def _api_stamp(obj: Obj, kind: str) -> Stamp:
        for c in obj.get("status", {}).get("conditions", []):
            if c.get("type") == kind and (t := api_time(c.get("lastTransitionTime"))):
                return Stamp(t, API_PRECISION)
        return Stamp(time.time(), API_PRECISION)

    def _run_of(self, created_at: float) -> int:
        for up in reversed(self.scale_ups):
            if up.decided.at <= created_at + API_PRECISION:
                return up.run
        return 0  # not from a scale-up we saw (a deleted pod replaced, or before the first decision)

    def endpoint_slice(self, kind: str, obj: Obj, at: float) -> None:
        if kind == "DELETED":
            return
        for ep in obj.get("endpoints") or []:
            ref = ep.get("targetRef") or {}
            times = self.pods.get(ref.get("name", ""))
            if times is None or times.endpoint is not None:
                continue
            if (ep.get("conditions") or {}).get("ready"):
                times.endpoint = Stamp(at, WATCH_PRECISION if kind != "LISTED" else API_PRECISION)

    def seen(self, seen: Seen) -> None:
        if isinstance(seen, RulesSeen):
            bisect.insort(self.rules.setdefault(seen.node, []), seen, key=lambda o: o.at)
        elif isinstance(seen, AnswerSeen):
            at = self.answers.get((seen.pod, seen.node))
            self.answers[(seen.pod, seen.node)] = seen.at if at is None else min(at, seen.at)  # lines may cross
        else:
            self.rounds.setdefault(seen.node, Rounds()).add(seen.at)

    def _rules_end(self, times: PodTimes, node: str, ready: Stamp) -> tuple[Stamp, str] | None:
        """When the node's rules first showed the pod's IP (after the pod existed), and why that end was moved to
        `ready` if it was seen earlier."""
        obs = self.rules.get(node, [])
        start = bisect.bisect_right(obs, times.created.at, key=lambda o: o.at)
        held = start > 0 and times.ip in obs[start - 1].ips  # in the rules already when the pod was created
        for o in obs[start:]:
            if times.ip not in o.ips:
                held = False
            elif not held:  # the IP appears: this pod's endpoint programmed
                if o.at >= ready.at:
                    return Stamp(o.at, o.precision), ""
                return Stamp(ready.at, o.precision), (f"the node's rules showed its IP {ready.at - o.at:.3f}s before"
                                                      " our watch saw its endpoint ready")  # fmt: skip
            if held and o.at >= ready.at:
                break
        if held:
            shown = obs[start - 1]
            return Stamp(ready.at, shown.precision), (f"IP {times.ip} reused: the node's rules held it for an"
                                                      " earlier pod since before this one was created")  # fmt: skip
        return None

    def _timed(self, nodes: list[str]) -> list[tuple[Sample, Clamp | None]]:
        """Every sample, each with why it was clamped to 0 (None when it was not)."""
        out: list[tuple[Sample, Clamp | None]] = []
        for up in self.scale_ups:
            if up.trigger is not None:
                out.append(self._sample("hpa_decision", RUN_SUBJECT, up.trigger, up.decided, up.run))
            if up.rs_scaled is not None:
                out.append(self._sample("replicaset_scaled", RUN_SUBJECT, up.decided, up.rs_scaled, up.run))
        runs = {up.run: up for up in self.scale_ups}
        for times in self.pods.values():
            scale_up = runs.get(times.run)
            if scale_up is None:
                continue
            chain: list[tuple[str, Stamp | None]] = [
                ("pod_created", times.created), ("scheduled", times.scheduled),
                ("containers_started", times.started), ("ready", times.ready), ("endpoint_ready", times.endpoint),
            ]  # fmt: skip
            previous: Stamp | None = scale_up.rs_scaled or scale_up.decided
            for stage, end in chain:
                if previous is None or end is None:
                    previous = None
                    break
                out.append(self._sample(stage, times.name, previous, end, times.run))
                previous = end
            if previous is None or not times.ip:
                continue
            for node in nodes:
                programmed = self._rules_end(times, node, previous)
                if programmed is None:
                    continue
                rules, why = programmed
                out.append(self._sample("rules_programmed", f"{times.name}@{node}", previous, rules, times.run, why))
                answered = self.answers.get((times.name, node))
                if answered is None:
                    continue
                # the request round before the first answer (none from this pod) brackets it
                first = Stamp(answered, self.rounds.get(node, Rounds()).precision(answered, rules.at))
                why = ""
                if answered < rules.at:
                    first = Stamp(rules.at, first.precision)
                    why = f"it answered {rules.at - answered:.3f}s before the rules read that first showed its IP"
                out.append(self._sample("first_request", f"{times.name}@{node}", rules, first, times.run, why))
        return out

    def samples(self, nodes: list[str]) -> list[Sample]:
        return [s for s, _ in self._timed(nodes)]

    def clamped(self, nodes: list[str]) -> list[str]:
        """The stages reported as 0 because their end was seen before their start, and why."""
        return clamp_notes(c for _, c in self._timed(nodes) if c is not None)

    @staticmethod
    def _sample(stage: str, subject: str, start: Stamp, end: Stamp, run: int,
                why: str = "") -> tuple[Sample, Clamp | None]:  # fmt: skip
        sample = Sample(TYPE, stage, STAGE_COMPONENTS[stage], subject, start.at, end.at,
                        max(start.precision, end.precision), run)  # fmt: skip
        if not why and end.at < start.at:  # two watches' events crossed, or an API timestamp's whole second
            why = f"its end was seen {start.at - end.at:.3f}s before its start (observations out of order)"
        elif not why and end.at == start.at:  # the split between the two is not observable, not measured as 0
            why = "its start and end carry one timestamp (" + (
                "both in one API second)" if sample.precision >= API_PRECISION else "one watch event showed both)"
            )
        return sample, Clamp(sample, why) if why else None

    def in_flight(self, nodes: list[str]) -> int:
        """Pods of a scale-up, still alive, that not every node has answered from yet."""
        return sum(
            1
            for t in self.pods.values()
            if t.run and t.name not in self.deleted and any((t.name, n) not in self.answers for n in nodes)
        )

    def incomplete(self) -> list[str]:
        """Pods of a scale-up that did not reach the end of the path while we watched, and pods never created."""
        # the path stopped before pod_created: creations refused (quota, admission) or never made; counted over all
        # scale-ups, since a late pod is put in the scale-up of its creation time
        asked = sum(u.to_replicas - u.from_replicas for u in self.scale_ups)
        missing = asked - sum(1 for t in self.pods.values() if t.run)
        uncreated = [f"{missing} of the {asked} pod(s) the scale-ups asked for never created (see the ReplicaSet's "
                     "FailedCreate events, e.g. exceeded quota)"] if missing > 0 else []  # fmt: skip
        unfinished = [
            f"{t.name} (scale-up {t.run}) never reached {stage}"
            for t in self.pods.values()
            if t.run
            for stage, end in (("Ready", t.ready), ("the EndpointSlice", t.endpoint))
            if end is None
        ]
        return (uncreated + unfinished)[:20]


@register
class HpaScaleUp(Measurement):
    """HPA-to-Ready per scale-up, stage by stage, each stage owned by one component."""

    name = TYPE
    Params = TargetParams

    def start(self) -> None:
        p = self.params if isinstance(self.params, TargetParams) else TargetParams()
        kube, ns = self.env.kube, self.namespace
        self.result = MeasurementResult(self.label, TYPE, time.time())
        self.tracker = HpaTracker(self.result.started_at)
        self.stop_event = threading.Event()
        hpa = must_get(kube, f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/{p.deployment}", "HPA")
        deploy = must_get(kube, f"/apis/apps/v1/namespaces/{ns}/deployments/{p.deployment}", "Deployment")
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
        base = f"/namespaces/{ns}"
        self.watchers = [
            Watcher(kube, f"/apis/autoscaling/v2{base}/horizontalpodautoscalers", self._locked(self.tracker.hpa),
                    self.stop_event, fieldSelector=f"metadata.name={p.deployment}"),
            Watcher(kube, f"/apis/apps/v1{base}/deployments", self._locked(self.tracker.deployment), self.stop_event,
                    fieldSelector=f"metadata.name={p.deployment}"),
            Watcher(kube, f"/apis/apps/v1{base}/replicasets", self._locked(self.tracker.replicaset), self.stop_event,
                    labelSelector=selector),
            Watcher(kube, f"/api/v1{base}/pods", self._locked(self.tracker.pod), self.stop_event,
                    labelSelector=selector),
            Watcher(kube, f"/apis/discovery.k8s.io/v1{base}/endpointslices", self._locked(self.tracker.endpoint_slice),
                    self.stop_event, labelSelector=f"kubernetes.io/service-name={p.service}"),
        ]  # fmt: skip
        self.lock = threading.Lock()
        self.nodes = sorted(n["metadata"]["name"] for n in kube.get("/api/v1/nodes")["items"])
        script = probe_script(ns, p.service, svc["spec"]["clusterIP"], int(svc["spec"]["ports"][0]["port"]))
        self.probes = [NodeProbe(self.env.nodes, n, script, self._locked_seen) for n in self.nodes]
        self.metrics_gaps: list[Gap] = []
        self.poller = threading.Thread(target=self._poll_metrics, name="metrics poll", daemon=True)
        for w in self.watchers:
            w.start()
        for probe in self.probes:
            probe.start()
        self.poller.start()
        for w in self.watchers:  # a change made right after start() must not hide in the initial list
            if not w.wait_listed(30):
                raise MissingPiece(f"could not list {w.path} within 30s: {w.gaps or 'no answer'}")

    def _locked(self, handler: Any) -> Any:
        def call(kind: str, obj: Obj, at: float) -> None:
            with self.lock:
                handler(kind, obj, at)

        return call

    def _locked_seen(self, seen: Seen) -> None:
        with self.lock:
            self.tracker.seen(seen)

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
        settle_until = time.monotonic() + SETTLE
        while time.monotonic() < settle_until:  # let a scale-up caught mid-way reach the end of its path
            with self.lock:
                if not self.tracker.in_flight(self.nodes):
                    break
            time.sleep(0.5)
        self.stop_event.set()
        for probe in self.probes:
            probe.stop()
        for w in self.watchers:
            w.join()
        self.poller.join(timeout=METRICS_POLL + 5)
        res = self.result
        res.finished_at = time.time()
        with self.lock:
            res.samples = self.tracker.samples(self.nodes)
            ups = self.tracker.scale_ups
            res.notes += [f"scale-up {u.run}: {u.from_replicas} → {u.to_replicas} replicas" for u in ups]
            res.notes += self.tracker.incomplete()
            res.notes += self.tracker.clamped(self.nodes)
        res.gaps = [g for w in self.watchers for g in w.gaps] + self.metrics_gaps
        if not self.tracker.scale_ups:
            res.notes.append("the HPA did not scale up while measuring: no samples")
        return res


def _requested_cores(deploy: Obj) -> float:
    containers = deploy["spec"]["template"]["spec"]["containers"]
    return sum(cpu_cores(c.get("resources", {}).get("requests", {}).get("cpu", "0")) for c in containers)
