"""The pure side of HPA-to-Ready (hpa_scale_up.py says what each stage means and how precise it is): fed with what
the watches, the metrics poll and the probes saw, each with the time it was seen, it finds the scale-ups and times
every stage of each. No I/O and no clock of its own, so it is tested with recorded inputs.
"""

# Over 300 lines: one pure state machine, tested with recorded inputs; splitting it would split its state.

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from chaoskit.figures import seconds
from chaoskit.measurements.probe import AnswerSeen, Rounds, RulesSeen, Seen
from chaoskit.measurements.watch import Obj
from chaoskit.model.timeline import (
    API_PRECISION,
    CLOCK_RESOLUTION,
    RUN_SUBJECT,
    STAGE_COMPONENTS,
    Clamp,
    Sample,
    Stamp,
    api_time,
    clamp_notes,
)
from chaoskit.seams.kube import condition

TYPE = "hpa_scale_up"
Clock = Callable[[], float]  # wall-clock seconds since the epoch, as time.time gives them


# how far back a metrics sample read after a scale-up may still be its trigger: metrics-server's 15 s resolution
# and one HPA sync (5 s on chaoskit's cluster, 15 s stock)
LATE_METRIC_S = 30.0
# how far a pod's watch event may overtake the scale write that made it: two watch streams, seconds apart at most
EARLY_POD_S = 5.0


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
    clock: Clock  # stamps a pod condition whose own lastTransitionTime is missing
    watch_precision: float = CLOCK_RESOLUTION  # how late a watch event may arrive here: measured over the run
    target_utilization: float | None = None
    replicas: int | None = None  # the Deployment's spec.replicas, as the HPA last set it
    last_scale_time: float | None = None
    early_rs: Stamp | None = None  # a ReplicaSet scale-up seen before the Deployment change that caused it
    min_replicas: int | None = None
    rs_replicas: dict[str, int] = field(default_factory=dict)
    scale_ups: list[ScaleUp] = field(default_factory=list)
    # by uid: a StatefulSet scaled down and up again re-creates a pod under its old name, a pod of its own
    pods: dict[str, PodTimes] = field(default_factory=dict)
    by_name: dict[str, PodTimes] = field(default_factory=dict)  # the newest pod of each name, for EndpointSlices
    known_pods: set[str] = field(default_factory=set)  # uids there before we started: not part of any scale-up
    deleted: set[str] = field(default_factory=set)  # uids
    above_since: Stamp | None = None  # the first metric sample above target since the last decision
    forced_at: Stamp | None = None  # minReplicas raised since the last decision
    rules: dict[str, list[RulesSeen]] = field(default_factory=dict)  # node -> every change of its rules, by time
    answers: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (pod name, node) -> answers, sorted
    rounds: dict[str, Rounds] = field(default_factory=dict)  # node -> its request rounds
    # the Service answers GET / with the pod's name (chaoskit's workload does): without it no request tells which pod
    # answered, so a pod's path ends when every node's rules hold its IP (no first_request stage)
    answers_name_the_pod: bool = True
    hpa_said: list[str] = field(default_factory=list)  # each AbleToScale/ScalingActive=False it reported, in order

    def hpa(self, kind: str, obj: Obj, at: float) -> None:
        spec, status = obj.get("spec", {}), obj.get("status", {})
        self.last_scale_time = api_time(status.get("lastScaleTime")) or self.last_scale_time
        for metric in spec.get("metrics", []):
            target = metric.get("resource", {}).get("target", {})
            if target.get("averageUtilization") is not None:
                self.target_utilization = float(target["averageUtilization"])
        for c in status.get("conditions") or []:  # why it does not scale, in its own words
            if c.get("type") in ("AbleToScale", "ScalingActive") and c.get("status") == "False":
                said = f"{c['type']}=False {c.get('reason', '')}: {c.get('message', '')}"[:300]
                if said not in self.hpa_said:
                    self.hpa_said.append(said)
        min_replicas = int(spec.get("minReplicas", 1))
        if self.min_replicas is not None and min_replicas > self.min_replicas and kind != "LISTED":
            self.forced_at = self.forced_at or Stamp(at)
        self.min_replicas = min_replicas

    def deployment(self, kind: str, obj: Obj, at: float) -> None:
        """The HPA's decision lands as a write of the Deployment's scale: spec.replicas raised."""
        replicas = int(obj.get("spec", {}).get("replicas") or 0)
        before, self.replicas = self.replicas, replicas
        if before is None or replicas <= before:
            return
        stamp = Stamp(at)
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
        for times in self.pods.values():  # pods whose watch event overtook this one (a StatefulSet has no RS step)
            if times.run == 0 and 0 < stamp.at - times.created.at <= EARLY_POD_S:
                times.run = up.run

    def metric(self, sampled_at: float, utilization: float) -> None:
        """A metrics API sample (its own timestamp) of the pods' average CPU utilization, in percent."""
        if self.target_utilization is None:
            return
        if utilization > self.target_utilization:
            last = self.scale_ups[-1] if self.scale_ups else None
            if last is not None and last.trigger is None and 0 <= last.decided.at - sampled_at <= LATE_METRIC_S:
                # the HPA acted on this sample before our poll read it: it is that scale-up's trigger
                last.trigger = Stamp(sampled_at, API_PRECISION)
                return
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
        stamp = Stamp(at, None if kind != "LISTED" else API_PRECISION)
        for up in reversed(self.scale_ups):
            if up.rs_scaled is None:
                up.rs_scaled = stamp
                return
        self.early_rs = stamp

    def pod(self, kind: str, obj: Obj, at: float) -> None:
        meta, spec, status = obj["metadata"], obj.get("spec", {}), obj.get("status", {})
        name = meta["name"]
        uid = meta.get("uid") or name
        if kind == "DELETED":
            self.deleted.add(uid)
            return
        if uid in self.known_pods:
            return
        listed = kind == "LISTED"
        times = self.pods.get(uid)
        if times is None:
            created_at = api_time(meta.get("creationTimestamp")) or at
            if listed and created_at < self.started_at:
                self.known_pods.add(uid)
                return
            created = Stamp(created_at, API_PRECISION) if listed else Stamp(at)
            times = self.pods[uid] = self.by_name[name] = PodTimes(name, self._run_of(created.at), created)
        seen = Stamp(at)
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

    def _api_stamp(self, obj: Obj, kind: str) -> Stamp:
        for c in obj.get("status", {}).get("conditions", []):
            if c.get("type") == kind and (t := api_time(c.get("lastTransitionTime"))):
                return Stamp(t, API_PRECISION)
        return Stamp(self.clock(), API_PRECISION)

    def _run_of(self, created_at: float) -> int:
        """The oldest scale-up decided by then that still lacks pods: the ReplicaSet fills the first ask first, so a
        pod a quota held back past a later scale-up still counts from the scale-up that asked for it."""
        decided = [up for up in self.scale_ups if up.decided.at <= created_at + API_PRECISION]
        filled = Counter(t.run for t in self.pods.values())
        lacking = [up for up in decided if filled[up.run] < up.to_replicas - up.from_replicas]
        if lacking:
            return lacking[0].run
        return decided[-1].run if decided else 0  # 0: not from a scale-up we saw (before the first decision)

    def endpoint_slice(self, kind: str, obj: Obj, at: float) -> None:
        if kind == "DELETED":
            return
        for ep in obj.get("endpoints") or []:
            ref = ep.get("targetRef") or {}
            times = self.pods.get(ref.get("uid", "")) or self.by_name.get(ref.get("name", ""))
            if times is None or times.endpoint is not None:
                continue
            if (ep.get("conditions") or {}).get("ready"):
                times.endpoint = Stamp(at, None if kind != "LISTED" else API_PRECISION)

    def seen(self, seen: Seen) -> None:
        if isinstance(seen, RulesSeen):
            bisect.insort(self.rules.setdefault(seen.node, []), seen, key=lambda o: o.at)
        elif isinstance(seen, AnswerSeen):
            bisect.insort(self.answers.setdefault((seen.pod, seen.node), []), seen.at)  # lines may cross
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
                return Stamp(ready.at, o.precision), (
                    f"the node's rules showed its IP {seconds(ready.at - o.at)} before our watch saw its endpoint ready"
                )
            if held and o.at >= ready.at:
                break
        if held:
            shown = obs[start - 1]
            return Stamp(ready.at, shown.precision), (
                f"IP {times.ip} reused: the node's rules held it for an earlier pod since before this one was created"
            )
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
                ("pod_created", times.created),
                ("scheduled", times.scheduled),
                ("containers_started", times.started),
                ("ready", times.ready),
                ("endpoint_ready", times.endpoint),
            ]
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
                answered = self._first_answer(times, node)
                if answered is None:
                    continue
                # the request round before the first answer (none from this pod) brackets it
                first = Stamp(answered, self.rounds.get(node, Rounds()).precision(answered, rules.at))
                why = ""
                if answered < rules.at:
                    first = Stamp(rules.at, first.precision)
                    why = f"it answered {seconds(rules.at - answered)} before the rules read that first showed its IP"
                out.append(self._sample("first_request", f"{times.name}@{node}", rules, first, times.run, why))
        return out

    def samples(self, nodes: list[str]) -> list[Sample]:
        return [s for s, _ in self._timed(nodes)]

    def clamped(self, nodes: list[str]) -> list[str]:
        """The stages reported as 0 because their end was seen before their start, and why."""
        return clamp_notes(c for _, c in self._timed(nodes) if c is not None)

    def _sample(
        self, stage: str, subject: str, start: Stamp, end: Stamp, run: int, why: str = ""
    ) -> tuple[Sample, Clamp | None]:
        sample = Sample(
            TYPE,
            stage,
            STAGE_COMPONENTS[stage],
            subject,
            start.at,
            end.at,
            max(start.within(self.watch_precision), end.within(self.watch_precision)),
            run,
        )
        if not why and end.at < start.at:  # two watches' events crossed, or an API timestamp's whole second
            why = f"its end was seen {seconds(start.at - end.at)} before its start (observations out of order)"
        elif not why and end.at == start.at:  # the split between the two is not observable, not measured as 0
            why = "its start and end carry one timestamp (" + (
                "both in one API second)" if sample.precision >= API_PRECISION else "one watch event showed both)"
            )
        return sample, Clamp(sample, why) if why else None

    def in_flight(self, nodes: list[str]) -> int:
        """Pods of a scale-up still on their way: alive and not yet answered from every node, or not created yet
        (refused until a quota goes); plus one for a minReplicas above the Deployment's replicas (a raise the HPA
        has not acted on yet: a frozen controller manager acts once it thaws; a raise first seen in a re-list after
        a watch gap counts too)."""
        asked = self.replicas is not None and (self.min_replicas or 0) > self.replicas
        on_the_way = sum(
            1
            for uid, t in self.pods.items()
            if t.run and uid not in self.deleted and any(not self._at_end(t, n) for n in nodes)
        )
        return int(asked) + on_the_way + max(0, self._uncreated())

    def _first_answer(self, times: PodTimes, node: str) -> float | None:
        """The pod's first answer through the node: none before it was created (those came from an earlier pod of
        its name)."""
        answers = self.answers.get((times.name, node), [])
        i = bisect.bisect_left(answers, times.created.at)
        return answers[i] if i < len(answers) else None

    def _at_end(self, times: PodTimes, node: str) -> bool:
        if self.answers_name_the_pod:
            return self._first_answer(times, node) is not None
        return bool(times.ip) and any(times.ip in o.ips for o in self.rules.get(node, []))

    def _asked(self) -> int:
        return sum(u.to_replicas - u.from_replicas for u in self.scale_ups)

    def _uncreated(self) -> int:
        """Pods the scale-ups asked for and no pod of theirs was created for (over all of them: a late pod is put in
        the oldest scale-up still lacking pods when it was created)."""
        return self._asked() - sum(1 for t in self.pods.values() if t.run)

    def incomplete(self) -> list[str]:
        """Pods of a scale-up that did not reach the end of the path while we watched, and pods never created."""
        # the path stopped before pod_created: creations refused (quota, admission) or never made
        asked, missing = self._asked(), self._uncreated()
        why = "see the FailedCreate events of the ReplicaSet or StatefulSet, e.g. exceeded quota"
        uncreated = [f"{missing} of the {asked} pod(s) the scale-ups asked for never created ({why})"] * (missing > 0)
        unfinished = [
            f"{t.name} (scale-up {t.run}) never reached {stage}"
            for t in self.pods.values()
            if t.run
            for stage, end in (("Ready", t.ready), ("the EndpointSlice", t.endpoint))
            if end is None
        ]
        return (uncreated + unfinished)[:20]
