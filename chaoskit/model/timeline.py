"""Pure timeline math shared by the measurements, the exporter and the reports: stages, samples, percentiles.

A sample is one stage of one subject (a pod, a node) with the clocks it was read from; its precision is that of
the coarser end: a watch event seen by us is as late as a watch event may be on this cluster (measured while
each measurement runs: measurements/watch.py), an API timestamp (creationTimestamp, conditions) 1 s, and an end seen by
the in-node probe the spacing of the two probe rounds that bracket it (measured per sample).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from chaoskit.model.moments import epoch, rfc3339, rfc3339_or_none

CLOCK_RESOLUTION = 0.001  # our clock's resolution as stamps are kept: a watch stage's precision is measured per run
API_PRECISION = 1.0  # metav1.Time is serialised with whole seconds


def api_time(value: object) -> float | None:
    """An API timestamp (RFC 3339, whole seconds or microseconds) as epoch seconds; None when absent or garbled."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class Stage:
    name: str
    component: str  # the component that owns the time spent in this stage
    description: str


# The HPA-to-Ready critical path, in order: each stage starts where the previous one ends.
HPA_STAGES: tuple[Stage, ...] = (
    Stage("hpa_decision", "controller-manager", "metric above target → the HPA raises the Deployment's replicas"),
    Stage("replicaset_scaled", "controller-manager", "Deployment scaled → its ReplicaSet's replicas raised"),
    Stage("pod_created", "controller-manager", "ReplicaSet scaled → the Pod object created"),
    Stage("scheduled", "scheduler", "Pod created → bound to a node (PodScheduled)"),
    Stage("containers_started", "kubelet", "scheduled → every container running"),
    Stage("ready", "kubelet", "containers running → Ready (readiness probe passed)"),
    Stage("endpoint_ready", "controller-manager", "Pod Ready → ready in the Service's EndpointSlice"),
    Stage("rules_programmed", "kube-proxy", "ready endpoint → present in each node's dataplane rules"),
    Stage("first_request", "kube-proxy", "rules programmed → first request through the Service answered by it"),
)
RULE_SYNC_STAGES: tuple[Stage, ...] = (
    Stage("rules_programmed", "kube-proxy", "EndpointSlice changed → the change present in the node's rules"),
    Stage("traffic_follows", "kube-proxy", "EndpointSlice changed → requests from the node follow the change"),
)
# A node lost and its pods back elsewhere, in order; `not_ready` and `evicted` last as long as a setting says (the
# node-monitor grace period, the pods' toleration of the unreachable taint), the rest is work.
NODE_LOSS_STAGES: tuple[Stage, ...] = (
    Stage("not_ready", "controller-manager", "last heartbeat (lease renewed) → the node's Ready condition Unknown"),
    Stage("tainted", "controller-manager", "NotReady → tainted node.kubernetes.io/unreachable:NoExecute"),
    Stage("evicted", "controller-manager", "tainted → the pod deleted (its toleration ran out)"),
    Stage("replacement_created", "controller-manager", "pod deleted → its ReplicaSet's replacement created"),
    Stage("scheduled", "scheduler", "replacement created → bound to another node (PodScheduled)"),
    Stage("ready", "kubelet", "scheduled → Ready (containers running, readiness probe passed)"),
    Stage("endpoint_ready", "controller-manager", "Pod Ready → ready in the Service's EndpointSlice"),
    Stage("rules_programmed", "kube-proxy", "ready endpoint → present in each other node's dataplane rules"),
)
# A backlog of pods waiting for the scheduler, and how fast it drains once the scheduler is back.
BACKLOG_STAGES: tuple[Stage, ...] = (Stage("scheduled", "scheduler", "Pod created → bound to a node (PodScheduled)"),)
SETTING_STAGES = {"not_ready": "node-monitor-grace-period", "evicted": "tolerationSeconds"}
STAGE_COMPONENTS: dict[str, str] = {s.name: s.component for s in (*HPA_STAGES, *RULE_SYNC_STAGES, *NODE_LOSS_STAGES)}

# A percentile needs enough samples to exist at all: p99 of 5 samples would be invented.
MIN_SAMPLES: dict[str, int] = {"p50": 2, "p90": 10, "p99": 100}
QUANTILES: dict[str, float] = {"p50": 0.50, "p90": 0.90, "p99": 0.99}


RUN_SUBJECT = "scale-up"  # the subject of stages that belong to a whole scale-up, not to one of its pods
LOST_NODE = "node/"  # the subject of a node loss's own stages (node/<name>): before any of its pods


def run_level(subject: str) -> bool:
    """Whether a sample belongs to a whole run (a scale-up, a lost node), before any one pod's stages."""
    return subject == RUN_SUBJECT or subject.startswith(LOST_NODE)


@dataclass(frozen=True)
class Stamp:
    """A moment seen, and how far it may lie from the moment it stamps."""

    at: float
    precision: float | None = None  # None: our watch's receipt, late by at most the watch delay measured over the run

    def within(self, watch_delay: float) -> float:
        """This stamp's precision, its watch receipt's known once the run's watch delay is."""
        return watch_delay if self.precision is None else self.precision


@dataclass(frozen=True)
class Sample:
    """One stage of one subject: when it started and ended (wall clock, seconds) and how precise that is."""

    measurement: str  # hpa_scale_up | rule_sync
    stage: str
    component: str
    subject: str  # pod name, "node/<name>", or "<pod>@<node>"
    start: float
    end: float
    precision: float  # seconds: the measured watch delay, API_PRECISION, or the probe rounds' spacing measured
    run: int = 0  # which scale-up or endpoint change this belongs to

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass(frozen=True)
class Gap:
    """A stretch where we could not observe (the API server restarted, a watch was re-listed)."""

    start: float
    end: float
    reason: str


@dataclass(frozen=True)
class Summary:
    count: int
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None
    mean: float | None
    precision: float  # the coarsest precision among the samples
    notes: tuple[str, ...] = ()
    precision_median: float = 0.0  # the typical sample's: probe brackets vary from sample to sample

    def get(self, statistic: str) -> float | None:
        if statistic == "count":
            return float(self.count)
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99, "max": self.max, "mean": self.mean}.get(statistic)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of a non-empty sequence (no interpolation: every figure is a real sample)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def summarize(samples: Iterable[Sample]) -> Summary:
    items = list(samples)
    values = [s.seconds for s in items]
    notes: list[str] = []
    stats: dict[str, float | None] = {}
    for name, q in QUANTILES.items():
        if len(values) >= MIN_SAMPLES[name]:
            stats[name] = percentile(values, q)
        else:
            stats[name] = None
            notes.append(f"{name} needs at least {MIN_SAMPLES[name]} samples, have {len(values)}")
    return Summary(
        count=len(values),
        p50=stats["p50"],
        p90=stats["p90"],
        p99=stats["p99"],
        max=max(values) if values else None,
        mean=sum(values) / len(values) if values else None,
        precision=max((s.precision for s in items), default=0.0),
        notes=tuple(notes),
        precision_median=percentile([s.precision for s in items], 0.5) if items else 0.0,
    )


@dataclass(frozen=True)
class Clamp:
    """A sample that reads 0 without a 0 having been measured, and why: its end was seen before its start (out of
    order, an IP reused) and clamped, or one observation showed both."""

    sample: Sample
    why: str


MAX_CLAMP_NOTES = 20  # beyond this a run is broken in one way; the count says how much more


def clamp_notes(clamps: Iterable[Clamp]) -> list[str]:
    """One note per clamped sample (a 0 that is not a measured 0), then how many more."""
    items = list(clamps)
    out = [
        f"{c.sample.stage} of {c.sample.subject} (run {c.sample.run}) reported as 0: {c.why}"
        for c in items[:MAX_CLAMP_NOTES]
    ]
    if len(items) > MAX_CLAMP_NOTES:
        out.append(f"... and {len(items) - MAX_CLAMP_NOTES} more stages reported as 0 for the same kinds of reasons")
    return out


@dataclass
class MeasurementResult:
    """What one measurement recorded during a run: raw samples (the timeline), summaries per stage, gaps."""

    name: str  # as the playbook calls it
    type: str  # hpa_scale_up | rule_sync
    started_at: float
    finished_at: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # a measurement's own figures (e.g. the component's SLI)

    def stages(self) -> list[str]:
        seen: dict[str, None] = {}
        for s in self.samples:
            seen.setdefault(s.stage, None)
        return list(seen)

    def summaries(self) -> dict[str, Summary]:
        """Per stage, plus "total" per subject and run (first stage start → last stage end)."""
        out = {stage: summarize(s for s in self.samples if s.stage == stage) for stage in self.stages()}
        if self.samples:
            out["total"] = summarize(self.totals())
        return out

    def totals(self) -> list[Sample]:
        """End to end per subject: a pod's total starts where its scale-up did (the run-level stages)."""
        spans: dict[tuple[int, str], list[Sample]] = {}
        for s in self.samples:
            if not run_level(s.subject):
                spans.setdefault((s.run, s.subject.split("@")[0]), []).append(s)
        for s in self.samples:
            if run_level(s.subject):
                for (run, _), xs in spans.items():
                    if run == s.run:
                        xs.append(s)
        return [
            Sample(
                self.type,
                "total",
                "",
                subject,
                min(x.start for x in xs),
                max(x.end for x in xs),
                max(x.precision for x in xs),
                run,
            )
            for (run, subject), xs in spans.items()
        ]

    def to_dict(self) -> dict[str, Any]:
        """Its moments in RFC 3339, its durations in seconds."""
        return {
            **asdict(self),
            "started_at": rfc3339(self.started_at),
            "finished_at": rfc3339_or_none(self.finished_at),
            "samples": [{**asdict(s), "start": rfc3339(s.start), "end": rfc3339(s.end)} for s in self.samples],
            "gaps": [{**asdict(g), "start": rfc3339(g.start), "end": rfc3339(g.end)} for g in self.gaps],
            "summaries": {stage: asdict(s) for stage, s in self.summaries().items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasurementResult:
        return cls(
            name=data["name"],
            type=data["type"],
            started_at=_at(data["started_at"]),
            finished_at=epoch(data.get("finished_at")) or 0.0,
            samples=[Sample(**{**s, "start": _at(s["start"]), "end": _at(s["end"])}) for s in data.get("samples", [])],
            gaps=[Gap(**{**g, "start": _at(g["start"]), "end": _at(g["end"])}) for g in data.get("gaps", [])],
            errors=list(data.get("errors", [])),
            notes=list(data.get("notes", [])),
            extra=dict(data.get("extra") or {}),
        )


def _at(value: object) -> float:
    at = epoch(value)
    if at is None:
        raise ValueError("a moment is missing")
    return at
