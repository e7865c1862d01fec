"""The pure side of the rule-sync measurement (rule_sync.py says what each figure means and how precise it is): fed
with EndpointSlice events and probe lines, each with the time it was seen, it finds the changes of the endpoints
kube-proxy must program and, per change and node, when the rules held them and when requests followed. No I/O, so
it is tested with recorded inputs.
"""

# Over 300 lines: one pure state machine, tested with recorded inputs; splitting it would split its state.

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskit.figures import seconds
from chaoskit.measurements.probe import FAILED, AnswerSeen, Rounds, RulesSeen, Seen
from chaoskit.measurements.watch import Obj
from chaoskit.model.timeline import CLOCK_RESOLUTION, STAGE_COMPONENTS, Clamp, Sample, api_time, clamp_notes

TYPE = "rule_sync"
TRIGGER_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time"


@dataclass(frozen=True)
class SliceView:
    """What kube-proxy reads from one EndpointSlice."""

    ready: frozenset[str]
    fallback: frozenset[str]  # serving and terminating: what kube-proxy routes to when no endpoint is ready
    pods: tuple[tuple[str, str], ...]  # (IP, pod) of every endpoint, ready or not
    trigger: float | None  # the last-change-trigger-time annotation (1 s)


def slice_view(obj: Obj) -> SliceView | None:
    """None for a slice kube-proxy's IPv4 rules do not use (the probe reads the `ip` family only)."""
    if obj.get("addressType", "IPv4") != "IPv4":
        return None
    ready: set[str] = set()
    fallback: set[str] = set()
    pods: list[tuple[str, str]] = []
    for ep in obj.get("endpoints") or []:
        cond = ep.get("conditions") or {}
        ips = ep.get("addresses") or []
        if cond.get("ready") is not False:  # unset means ready, as kube-proxy reads it
            ready.update(ips)
        elif cond.get("serving") is not False and cond.get("terminating"):
            fallback.update(ips)
        pod = (ep.get("targetRef") or {}).get("name")
        pods += [(ip, pod) for ip in ips if pod]
    trigger = api_time((obj.get("metadata", {}).get("annotations") or {}).get(TRIGGER_ANNOTATION))
    return SliceView(frozenset(ready), frozenset(fallback), tuple(pods), trigger)


def programmed_set(views: Iterable[SliceView]) -> frozenset[str]:
    """The endpoint IPs kube-proxy programs for a Service: the ready ones, else the serving terminating ones."""
    items = list(views)
    ready = frozenset().union(*(v.ready for v in items))
    return ready or frozenset().union(*(v.fallback for v in items))


@dataclass(frozen=True)
class EndpointChange:
    number: int  # 1-based; the samples' run
    at: float  # our watch received it (as late as the run's measured watch delay)
    ips: frozenset[str]  # the set every node's rules hold once the change is programmed
    added: frozenset[str]
    removed: frozenset[str]
    added_pods: frozenset[str]
    removed_pods: frozenset[str]
    trigger: float | None  # the annotation on the slice update that made the change (1 s); None on removals
    late: bool = False  # seen only in a re-list after a watch gap: `at` is late, so not timed

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "at": self.at,
            "trigger": self.trigger,
            "endpoints": len(self.ips),
            "added": sorted(self.added_pods or self.added),
            "removed": sorted(self.removed_pods or self.removed),
            "late": self.late,
        }


@dataclass
class NodeAnswers:
    """One node's probe answers, indexed for the stage searches (times sorted; lines can arrive a bit out of order)."""

    all: list[float] = field(default_factory=list)  # every answer, any pod
    failed: list[float] = field(default_factory=list)  # when each request that got no answer was sent
    by_pod: dict[str, list[float]] = field(default_factory=dict)

    def add(self, at: float, pod: str) -> None:
        if pod == FAILED:
            bisect.insort(self.failed, at)
            return
        bisect.insort(self.all, at)
        bisect.insort(self.by_pod.setdefault(pod, []), at)


@dataclass(frozen=True)
class End:
    """Where a stage ended on one node, how precisely that is known, and why it was moved to the stage's start."""

    at: float
    precision: float  # seconds: the spacing of the probe rounds that bracket it
    clamped: str = ""  # why the end seen lies before the stage start (the sample then reads 0)


def _first_at_or_after(times: Sequence[float], t: float) -> float | None:
    i = bisect.bisect_left(times, t)
    return times[i] if i < len(times) else None


def _last_in(times: Sequence[float], start: float, end: float | None) -> float | None:
    """The last time in [start, end) (end None: no bound)."""
    hi = len(times) if end is None else bisect.bisect_left(times, end)
    return times[hi - 1] if hi > 0 and times[hi - 1] >= start else None


@dataclass
class RuleSyncTracker:
    """Pure: fed with EndpointSlice events and probe lines (with the times they were seen), it finds the endpoint
    changes and, per change and node, when the rules held the new set and when traffic followed."""

    started_at: float
    traffic: bool = True  # requests are sent and their answers name their pod: traffic_follows is measured
    # the Service keeps each client on the pod it first reached (sessionAffinity ClientIP): a node's requests never
    # move to an added endpoint, so traffic can only be seen following a removal
    affinity: bool = False
    watch_precision: float = CLOCK_RESOLUTION  # how late a change's watch event may arrive: measured, per run
    slices: dict[str, SliceView] = field(default_factory=dict)
    pod_of: dict[str, str] = field(default_factory=dict)  # endpoint IP -> pod, from every endpoint ever seen
    current: frozenset[str] = frozenset()
    watching: bool = False  # a watch event arrived: a listing from now on is a re-list after a gap
    changes: list[EndpointChange] = field(default_factory=list)
    annotated: list[tuple[float, float]] = field(default_factory=list)  # (received, trigger): one SLI observation each
    rules: dict[str, list[RulesSeen]] = field(default_factory=dict)  # node -> every change of its rules, by time
    answers: dict[str, NodeAnswers] = field(default_factory=dict)
    rounds: dict[str, Rounds] = field(default_factory=dict)  # node -> its request rounds

    def endpoint_slice(self, kind: str, obj: Obj, at: float) -> None:
        listed = kind == "LISTED"
        self.watching = self.watching or not listed
        name = obj.get("metadata", {}).get("name", "")
        view = None if kind == "DELETED" else slice_view(obj)
        before = self.slices.get(name)
        if view is None:
            self.slices.pop(name, None)
        else:
            self.slices[name] = view
            self.pod_of.update(view.pods)
            if not listed and view.trigger is not None and view != before:
                self.annotated.append((at, view.trigger))
        ips = programmed_set(self.slices.values())
        if ips == self.current:
            return
        previous, self.current = self.current, ips
        if listed and not self.watching:
            return  # the first listing: the state before we measure, not a change
        added, removed = ips - previous, previous - ips
        self.changes.append(
            EndpointChange(
                len(self.changes) + 1,
                at,
                ips,
                added,
                removed,
                frozenset(self.pod_of[ip] for ip in added if ip in self.pod_of),
                frozenset(self.pod_of[ip] for ip in removed if ip in self.pod_of),
                view.trigger if view is not None and not listed else None,
                late=listed,
            )
        )

    def seen(self, seen: Seen) -> None:
        if isinstance(seen, RulesSeen):
            bisect.insort(self.rules.setdefault(seen.node, []), seen, key=lambda o: o.at)
        elif isinstance(seen, AnswerSeen):
            self.answers.setdefault(seen.node, NodeAnswers()).add(seen.at, seen.pod)
        else:
            self.rounds.setdefault(seen.node, Rounds()).add(seen.at)

    def _state_at(self, node: str, t: float) -> RulesSeen | None:
        obs = self.rules.get(node, [])
        i = bisect.bisect_right(obs, t, key=lambda o: o.at)
        return obs[i - 1] if i else None

    def _first_rules(self, node: str, at: float, ok: Callable[[frozenset[str]], bool]) -> End | None:
        """When the node's rules first satisfied `ok` at or after `at` (`at` itself, clamped, if they already did)."""
        state = self._state_at(node, at)
        if state is not None and ok(state.ips):
            held = "since the probe's first read" if state.since is None else f"for {seconds(at - state.at)}"
            return End(at, state.precision, f"the node's rules already held it {held} when our watch saw the change")
        obs = self.rules.get(node, [])
        for o in obs[bisect.bisect_right(obs, at, key=lambda o: o.at) :]:
            if ok(o.ips):
                return End(o.at, o.precision)
        return None

    def rules_end(self, change: EndpointChange, node: str) -> End | None:
        later = {c.ips for c in self.changes[change.number - 1 :]}

        def holds(ips: frozenset[str]) -> bool:
            return ips in later and change.added <= ips and not change.removed & ips

        return self._first_rules(node, change.at, holds)

    def rules_programmed(self, change: EndpointChange, node: str) -> float | None:
        end = self.rules_end(change, node)
        return None if end is None else end.at

    def traffic_measurable(self, change: EndpointChange) -> bool:
        """Whether requests can be seen following `change`: with affinity, only one that removes an endpoint."""
        return self.traffic and (not self.affinity or bool(change.removed))

    def traffic_end(self, change: EndpointChange, node: str) -> End | None:
        if not self.traffic_measurable(change):
            return None
        answers, rounds = self.answers.get(node, NodeAnswers()), self.rounds.get(node, Rounds())
        since = self.changes[change.number - 2].at if change.number > 1 else self.started_at
        ends: list[End] = []
        if change.added and len(change.added_pods) < len(change.added) and not self.affinity:
            return None  # an endpoint without a pod name: its answers cannot be told apart
        for pod in sorted(() if self.affinity else change.added_pods):  # affinity: no client moves to a new pod
            first = _first_at_or_after(answers.by_pod.get(pod, []), since)
            if first is None:
                return None
            ends.append(End(first, rounds.precision(first, since)))
        if change.removed:
            gone = self._first_rules(node, change.at, lambda ips: not change.removed & ips)
            reached = [
                _last_in(answers.by_pod.get(p, []), change.at, self._readded(change, p)) for p in change.removed_pods
            ]
            held_until = None if gone is None else gone.at
            reached.append(_last_in(answers.failed, change.at, held_until))  # sent while the rules still held one
            last = max((t for t in reached if t is not None), default=None)
            # the first answer in a round after the last one that still reached a removed pod
            begin = change.at if last is None else rounds.next_start(last)
            after = None if begin is None else _first_at_or_after(answers.all, begin)
            if after is None or gone is None:
                return None  # while the rules still hold a removed endpoint, traffic may still reach it
            ends.append(End(after, rounds.precision(after, change.at, last)))
        end = max(ends, key=lambda e: e.at)
        if end.at >= change.at:
            return end
        return End(
            change.at,
            end.precision,
            f"an added pod answered {seconds(change.at - end.at)} before our watch saw the change",
        )

    def traffic_follows(self, change: EndpointChange, node: str) -> float | None:
        end = self.traffic_end(change, node)
        return None if end is None else end.at

    def _readded(self, change: EndpointChange, pod: str) -> float | None:
        """When a later change brought a removed pod back (its answers from then on are legitimate)."""
        return next((c.at for c in self.changes[change.number :] if pod in c.added_pods), None)

    def converged(self, nodes: Iterable[str]) -> bool:
        """Every timed change reached both stage ends (the rules' alone without traffic) on every node."""
        return all(
            self.rules_programmed(c, n) is not None
            and (not self.traffic_measurable(c) or self.traffic_follows(c, n) is not None)
            for c in self.changes
            if not c.late
            for n in nodes
        )

    def timed(self, nodes: Iterable[str]) -> list[tuple[Sample, Clamp | None]]:
        """Every sample, each with why it was clamped to 0 (None when it was not)."""
        out: list[tuple[Sample, Clamp | None]] = []
        for c in self.changes:
            if c.late:
                continue
            for node in nodes:
                for stage, end in (
                    ("rules_programmed", self.rules_end(c, node)),
                    ("traffic_follows", self.traffic_end(c, node)),
                ):
                    if end is None:
                        continue
                    sample = Sample(
                        TYPE,
                        stage,
                        STAGE_COMPONENTS[stage],
                        f"{c.number}@{node}",
                        c.at,
                        end.at,
                        max(self.watch_precision, end.precision),
                        c.number,
                    )
                    out.append((sample, Clamp(sample, end.clamped) if end.clamped else None))
        return out

    def samples(self, nodes: Iterable[str]) -> list[Sample]:
        return [s for s, _ in self.timed(nodes)]

    def clamped(self, nodes: Iterable[str]) -> list[str]:
        """The stages reported as 0 because their end was seen before their start, and why."""
        return clamp_notes(c for _, c in self.timed(nodes) if c is not None)

    def probe_rounds(self) -> dict[str, dict[str, dict[str, float]]]:
        """Per node and loop, how far apart the probe's rounds really were (nominally INTERVAL): for requests every
        round; for the rules, the brackets of the changes seen (the loop reports only those)."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for node in sorted({*self.rounds, *self.rules}):
            starts = self.rounds.get(node, Rounds()).starts
            loops = {
                "requests": [b - a for a, b in zip(starts, starts[1:], strict=False)],
                "rules": [o.precision for o in self.rules.get(node, []) if o.since is not None],
            }
            out[node] = {loop: _spread(xs) for loop, xs in loops.items() if xs}
        return out

    def incomplete(self, nodes: Iterable[str]) -> list[str]:
        """What did not happen while we watched, in words (a missing sample is never a zero)."""
        out: list[str] = []
        for c in self.changes:
            if c.late:
                out.append(f"change {c.number} was seen only after a watch gap (re-list): not timed")
                continue
            for node in nodes:
                if self.rules_programmed(c, node) is None:
                    out.append(f"change {c.number} on {node}: the rules never held the new endpoints while measured")
                elif self.traffic_measurable(c) and self.traffic_follows(c, node) is None:
                    out.append(f"change {c.number} on {node}: requests did not follow the change while measured")
        return out[:40]


def _spread(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"count": len(ordered), "median": ordered[len(ordered) // 2], "max": ordered[-1]}
